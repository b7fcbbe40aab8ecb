import pandas as pd, re
cols = list(pd.read_csv(__import__('pathlib').Path(__file__).resolve().parents[2] / 'src/nlgbias/data/intersectional/us_rows_data.csv', nrows=1).columns)[2:]

IRREG = {"women": "woman", "men": "man", "salespersons": "salesperson", "chiefs": "chief",
         "waitresses": "waitress", "hostesses": "hostess", "actresses":"actress", "boss":"boss",
         "athletes":"athlete","clergy":"clergy","bailiffs":"bailiff","sheriff's":"sheriff's"}
def sing(w):
    if w in IRREG: return IRREG[w]
    if w.endswith("men"): return w[:-3]+"man"
    if w.endswith("ies") and len(w)>4: return w[:-3]+"y"
    if re.search(r"(ss|sh|ch|x)es$", w): return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and not w.endswith("ics") and not w.endswith("us"): return w[:-1]
    return w
DROP_TAIL = re.compile(r",\s*(all other|except .*|including .*|general|hand|clerical|dispensing|wood|metal and plastic|"
                       r"synthetic and glass fibers|recordkeeping|utilities|nonrestaurant|farm products|government programs|"
                       r"industrial and utility|transportation equipment|motor vehicles|mining|oil and gas|oil, gas, and mining|"
                       r"restaurant, lounge, and coffee shop|cafeteria, food concession, and coffee shop|construction and maintenance|"
                       r"textile, garment, and related materials|services, all other|wholesale and manufacturing|"
                       r"sports and related workers, all other|applications and systems software)$", re.I)
out = {}
for c in cols:
    s = c
    for _ in range(3):
        s = DROP_TAIL.sub("", s)
    s = re.sub(r"^(Miscellaneous|Other) ", "", s, flags=re.I)
    s = re.sub(r", including .*$", "", s)
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+(?:other\s+)?|/", s)
    parts = [p.strip().lower() for p in parts if p.strip()]
    # shared head: a part that is a single modifier word (not plural) takes the last part's head
    last_head = parts[-1].split()[-1]
    res = []
    for p in parts:
        ws = p.split()
        if ws[-1].endswith("s") or ws[-1] in ("clergy",) or len(ws) > 1 and ws[-1] == last_head:
            res.append(" ".join(ws[:-1] + [sing(ws[-1])]))
        else:
            res.append(p + " " + sing(last_head))
    out[c] = res
for c, r in out.items():
    print(f"{c!r}: {r},")
