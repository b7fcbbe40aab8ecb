"""Build src/nlgbias/data/occupations/{lexicon,synonyms}.csv (a maintainer tool, run once).

    python scripts/occupations/build_lexicon.py [THIRD_PARTY_DATA_DIR]

THIRD_PARTY_DATA_DIR holds intersectional/ (job_replacements.csv, XLNET/xlnet_gender_occupations.csv)
and debiaswe/ (professions.json); default: ../shared/data next to the repository.
bls_nouns.txt (beside this script) is the hand-split list of job nouns in the BLS titles that
bls_split.py proposed.
"""
import ast, csv, json, re, sys
from pathlib import Path
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / 'src/nlgbias/data/occupations'
DATA = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / 'shared/data'

def norm(t):
    t = t.strip().lower().replace('\u2019', "'")
    t = re.sub(r"\s+", " ", t.replace('_', ' '))
    return t

# ---------------------------------------------------------------- our own lists
COMMON = """
accountant; actor; actress; acupuncturist; administrator; advisor; adviser; aerobics instructor; agent; aide;
air hostess; airline pilot; ambassador; analyst; anesthesiologist; animal keeper; announcer; app developer;
apprentice; archaeologist; architect; army officer; art dealer; art director; art teacher; artisan; artist; assembler;
assistant; assistant coach; assistant director; assistant editor; assistant manager; assistant principal;
assistant professor; associate professor; astronaut; athlete; attendant; au pair; auctioneer; auditor; author; auto mechanic;
babysitter; baby sitter; baggage handler; bailiff; baker; ballerina; bank clerk; bank manager; bank teller; banker; bar manager;
barback; barber; barista; barkeeper; barkeep; barmaid; barman; bartender; basketball coach; bell boy; bellboy; bellhop; biologist;
blacksmith; blogger; boatman; bodyguard; bookkeeper; bookseller; bouncer; boxer; branch manager; brand manager; bricklayer;
broker; budtender; builder; bus boy; busboy; bus conductor; bus driver; business analyst; business consultant; business executive;
business manager; business owner; businessman; businesswoman; butcher; butler; buyer; cab driver; cabbie; cabinet maker;
call center agent; call centre agent; camera operator; cameraman; camerawoman; campaign manager; car mechanic;
car washer; care assistant; care giver; care worker; caregiver; carer; caretaker; carpenter; cartoonist; case manager; caseworker;
cashier; caterer; ceo; cfo; chairman; chairwoman; chairperson; chambermaid; charity worker; chauffeur; checkout clerk; chef;
chemist; chief executive; chief executive officer; child care worker; childcare worker; childminder; chimney sweep; chiropractor;
choreographer; cinematographer; civil engineer; civil servant; cleaner; cleaning lady; cleaning woman; clergyman; clerk; clinician;
coach; coal miner; cobbler; cocktail waitress; coder; columnist; comedian; commentator; community organizer; community worker;
companion; composer; computer programmer; computer scientist; computer technician; concierge; conductor; construction manager;
construction worker; consultant; content creator; content writer; contractor; cook; copy editor; copywriter; coroner; correspondent;
cosmetologist; counselor; counsellor; courier; court clerk; court reporter; cowboy; craftsman; craftswoman; crane operator; croupier;
curator; custodian; customer service agent; customer service representative; customs officer; dairy farmer; dancer; data analyst;
data entry clerk; data scientist; day laborer; daycare worker; dean; debt collector; delivery boy; delivery driver; delivery man;
deliveryman; dental assistant; dental hygienist; dentist; deputy; deputy sheriff; dermatologist; designer; desk clerk; detective;
developer; dietitian; dietician; diplomat; director; disc jockey; dishwasher; dispatcher; diver; dj; dock worker; dockworker; doctor;
dog groomer; dog trainer; dog walker; domestic helper; domestic servant; domestic worker; doorman; drafter; draftsman; dressmaker;
driver; drummer; drywaller; dry cleaner; ecologist; economist; editor; educator; electrical engineer; electrician; elementary school teacher;
embalmer; emergency medical technician; emt; engineer; english teacher; entertainer; entrepreneur; esthetician; estate agent;
event planner; executive; executive assistant; exterminator; factory worker; farm hand; farm laborer; farm worker; farmer; farmhand;
fashion designer; fashion model; film director; film editor; film producer; filmmaker; financial advisor; financial adviser;
financial analyst; financial planner; fire chief; firefighter; fireman; fisherman; fishmonger; fitness instructor; fitness trainer;
flight attendant; florist; flower seller; food server; football coach; football player; footballer; foreman; forester; forklift driver;
forklift operator; founder; co-founder; freelance writer; front desk clerk; fruit seller; fundraiser; funeral director; game designer;
game developer; garbage collector; garbage man; gardener; garment worker; gas station attendant; geologist; ghostwriter; glazier;
goldsmith; golf caddy; governess; graphic artist; graphic designer; grave digger; gravedigger; grocer; groomer; groundskeeper; guard;
guidance counselor; guide; gym instructor; gynecologist; hairdresser; hair stylist; hairstylist; handyman; hawker; head chef;
head coach; head cook; head nurse; head teacher; headteacher; head waiter; headmaster; headmistress; health care worker;
healthcare worker; health worker; herder; historian; home health aide; homemaker; host; hostess; hotel clerk; hotel manager;
hotel receptionist; house cleaner; house painter; househusband; housekeeper; housemaid; housewife; hr manager; hunter; hvac technician;
illustrator; imam; innkeeper; inspector; instructor; insurance agent; insurance broker; interior designer; intern; interpreter;
investment banker; investigator; it consultant; it manager; it specialist; it support; it technician; janitor; jeweler; jeweller;
jockey; journalist; judge; kindergarten teacher; kitchen assistant; kitchen hand; kitchen helper; kitchen porter; lab assistant;
lab technician; laboratory assistant; laboratory technician; laborer; labourer; landlady; landlord; landscaper; laundress;
laundry worker; law clerk; lawyer; lecturer; legal assistant; legal secretary; librarian; library assistant; lifeguard; line cook;
linguist; loan officer; locksmith; logger; logistics manager; lorry driver; lumberjack; machine operator; machinist; magician;
maid; mail carrier; mailman; maintenance man; maintenance worker; makeup artist; manager; manicurist; marine biologist;
market trader; marketing consultant; marketing director; marketing executive; marketing manager; marketing specialist; mason;
massage therapist; masseur; masseuse; math teacher; mathematician; mayor; mechanic; mechanical engineer; medic; medical assistant;
medical doctor; medical technician; mental health counselor; merchant; messenger; meteorologist; midwife; migrant worker;
military officer; milkman; miner; minister; missionary; model; monk; mortician; mover; music teacher; musician; nail technician;
nanny; navy officer; network administrator; news anchor; newscaster; night watchman; novelist; nun; nurse; nurse practitioner;
nursing assistant; nurse's aide; nurse aide; nutritionist; obstetrician; office administrator; office assistant; office clerk;
office manager; office worker; officer; oil rig worker; operator; optician; optometrist; orderly; orthodontist; painter;
paralegal; paramedic; park ranger; parking attendant; pastor; pastry chef; patrol officer; pawnbroker; pediatrician; peddler;
performer; personal assistant; personal shopper; personal trainer; pet sitter; pharmacist; pharmacy assistant; pharmacy technician;
philosopher; photographer; photojournalist; physical therapist; physician; physician assistant; physicist; physiotherapist; pianist;
pilot; pizza delivery driver; plasterer; playwright; plumber; poet; police detective; police officer; policeman; policewoman;
political scientist; politician; porter; postal worker; postman; postwoman; potter; preacher; preschool teacher; president; priest;
primary school teacher; principal; printer; prison guard; prison officer; private detective; private investigator; probation officer;
producer; product manager; professor; programmer; project manager; promoter; proofreader; property manager; prostitute; psychiatrist;
psychologist; psychotherapist; public relations officer; publicist; publisher; rabbi; radio host; radiographer; radiologist;
rancher; real estate agent; real estate broker; realtor; receptionist; recruiter; referee; registered nurse; reporter;
research assistant; research scientist; researcher; restaurant manager; restaurateur; retail assistant; retail manager;
retail worker; rickshaw driver; roofer; sailor; sales assistant; sales associate; sales clerk; sales executive; sales manager;
sales rep; sales representative; salesgirl; salesman; salesperson; saleswoman; sanitation worker; school counselor; school nurse;
school principal; school teacher; schoolteacher; scientist; screenwriter; sculptor; seamstress; secretary; security guard;
security officer; senator; server; sex worker; shepherd; sheriff; ship captain; shoemaker; shop assistant; shop manager; shopkeeper;
shopgirl; singer; singer-songwriter; social media manager; social worker; software developer; software engineer; soldier;
solicitor; songwriter; sound engineer; sous chef; speech therapist; spokesperson; sports coach; stable boy; stage manager;
statistician; steelworker; steward; stewardess; stockbroker; store clerk; store manager; storekeeper; street cleaner;
street sweeper; street vendor; stripper; stuntman; stylist; substitute teacher; supervisor; surgeon; surveyor; systems analyst;
tailor; tattoo artist; tax accountant; tax collector; taxi driver; teacher; teaching assistant; teacher's aide; teacher's assistant;
technician; telemarketer; teller; therapist; ticket collector; tiler; tour guide; tractor driver; trader; train driver; trainer;
translator; travel agent; truck driver; trucker; tutor; typist; uber driver; umpire; undertaker; upholsterer; usher; valet;
van driver; vendor; vet; veterinarian; veterinary technician; vet tech; video editor; videographer; vice president; vicar;
waiter; waitress; warden; warehouse manager; warehouse worker; watchmaker; watchman; weaver; web designer; web developer;
wedding planner; welder; window cleaner; wine merchant; woodcutter; wood cutter; woodworker; writer; yoga instructor;
youth worker; zookeeper; beekeeper; shipbuilder; shipwright; co-pilot; copilot; co-founder; co-owner; coordinator; associate; academic; research fellow; martial artist; smuggler; mercenary;
team leader; shift manager; shift supervisor; shift leader; stay-at-home mom;
stay-at-home mother; stay-at-home dad; stay-at-home father; stay-at-home parent; line cook; prep cook; hotel porter; nursemaid; wet nurse; midwife; herbalist; healer; fortune teller; astrologer; tailoress; washerwoman;
cook's assistant; chef's assistant; doctor's assistant; lawyer's assistant; personal chef; private chef; personal driver;
private tutor; home tutor; live-in maid; housecleaner; cleaning woman; cleaning man; office cleaner; hotel maid; room attendant;
housekeeping attendant; lunch lady; dinner lady; kitchen worker; restaurant worker; hotel worker; fast food worker; food vendor;
coffee shop worker; store employee; shop worker; bank employee; government employee; government worker; public servant;
council worker; aid worker; humanitarian worker; community health worker; support worker; care home worker; nursing home worker;
hospital worker; farm manager; ranch hand; fruit picker; cotton picker; tea picker; crop picker; seasonal worker;
handyman; odd-job man; repairman; repairwoman; technician; electrical technician; maintenance technician;
cable technician; security analyst; cybersecurity analyst; network engineer; systems engineer; data engineer; web designer;
ux designer; product designer; game tester; software tester; quality assurance tester; it professional; database administrator;
system administrator; systems administrator; tech support; help desk technician; photographer; fashion photographer;
wedding photographer; journalist; sports journalist; news reporter; tv presenter; television presenter; presenter; radio presenter;
broadcaster; blogger; vlogger; youtuber; influencer; social media influencer; podcaster; streamer; comedian; stand-up comedian;
clown; circus performer; acrobat; juggler; street performer; busker; puppeteer; ventriloquist; magician; illusionist;
film star; movie star; pop star; rock star; rapper; dj; music producer; record producer; sound technician; lighting technician;
stagehand; set designer; costume designer; make-up artist; beautician; nail artist; tattooist; piercer; barber;
hair dresser; wig maker; perfumer; florist; baker; confectioner; pastry cook; patissier; chocolatier; butcher; fishmonger;
greengrocer; grocer; shopkeeper; storekeeper; store owner; shop owner; restaurant owner; hotel owner; bar owner; landlord;
property developer; real estate developer; investor; financier; banker; accountant; bookkeeper; auditor; actuary; economist;
"""
# status words, relations and phrases that follow a job frame but are not occupation titles
NOT_TITLES = """
volunteer; freelancer; freelance; student; graduate student; college student; university student; high school student;
law student; medical student; nursing student; phd student; pupil; trainee; worker; workers; employee; staff member; staff;
member; team member; team player; team; professional; expert; specialist; partner; colleague; co-worker; coworker;
mother; father; mom; dad; mum; parent; wife; husband; housewife's; daughter; son; sister; brother; friend; girlfriend; boyfriend;
woman; man; lady; gentleman; person; girl; boy; child; kid; role model; model student; model citizen; citizen; resident;
member of staff; part; kind; sort; type; result; whole; unit; group; family; couple; pair; duo; mentor; leader; boss;
hero; heroine; saint; king; queen; prince; princess; emperor; empress; duke; duchess; baron; baroness; lord; knight;
messiah; prophet; god; goddess; angel; demon; spy; slave; servant's; prisoner; inmate; patient; client; customer; guest;
tourist; visitor; traveler; immigrant; refugee; retiree; pensioner; veteran; activist; advocate; campaigner; protester;
philanthropist; socialite; celebrity; star; genius; fan; lover; mistress; wingman; sidekick; go-between; middleman; liaison;
representative; spokesperson's; full-time mom; full-time mother; single mother; single mom; single parent; homeowner; owner; temp; temporary;
contractor's; apprentice's; nobody; somebody; someone; anyone; everything; anything; one; sex symbol; sex object; guinea pig;
lead; servant of god; servant of jesus; servant of jesus christ; servant of christ; servant of the lord;
servant of allah; double agent; free agent; jack of all trades; maid of honor; maid of honour; man of god; man of the cloth;
best man; sex slave; house husband's; bridge; mediator's; replacement; substitute; stand-in; understudy's; helper; hand; crew member;
human; robot; machine; tool; consultant's; assistant's; job; position; role; career; post; gig; living; profession; trade;
"""
# NB: "worker", "employee", "professional", "specialist", "helper", "owner", "leader", "boss" without a
# modifier do not say which occupation; with one ("factory worker", "business owner") the compound
# is looked up in the lexicon.

# synonyms we add on top of Kirk et al.'s merges: spelling variants, abbreviations, true synonyms.
# Never across a gendered pair or between ranks of one hierarchy.
OUR_SYNONYMS = """
cab driver > taxi driver; cabbie > taxi driver; taxi-driver > taxi driver; taxi man > taxi driver; uber driver > taxi driver
nurse practitioner > nurse; registered nurse > nurse; licensed practical nurse > nurse; lpn > nurse; rn > nurse
nursing assistant > nurse; nurse's aide > nurse; nurse aide > nurse; cna > nurse; nurse midwife > nurse; nurse anesthetist > nurse
school nurse > nurse; head nurse > head nurse; wet nurse > wet nurse
attorney > lawyer; physician > doctor; medical doctor > doctor; family doctor > doctor; gp > doctor; general practitioner > doctor
cop > police officer; patrol officer > police officer; police man > policeman; police woman > policewoman
school teacher > teacher; schoolteacher > teacher; math teacher > teacher; maths teacher > teacher; english teacher > teacher;
art teacher > teacher; music teacher > teacher; science teacher > teacher; history teacher > teacher; language teacher > teacher
college professor > professor; university professor > professor; prof > professor
baby sitter > babysitter; baby-sitter > babysitter
care giver > caregiver; carer > caregiver; care worker > caregiver; care assistant > caregiver; support worker > caregiver
hair stylist > hairdresser; hairstylist > hairdresser; hair dresser > hairdresser
barkeeper > bartender; barkeep > bartender; bar keeper > bartender; bar-keeper > bartender; bar tender > bartender
bar waiter > waiter; head waiter > head waiter; bar waitress > waitress; cocktail waitress > waitress
house keeper > housekeeper; house cleaner > cleaner; housecleaner > cleaner; office cleaner > cleaner
housemaid > maid; hotel maid > maid; live-in maid > maid; chambermaid > maid; maid servant > maid
book keeper > bookkeeper; shop keeper > shopkeeper; store keeper > storekeeper; grounds keeper > groundskeeper
deliveryman > deliveryman; delivery man > deliveryman; delivery-man > deliveryman
mail man > mailman; post man > postman; door man > doorman
ceo > ceo; chief executive > ceo; chief executive officer > ceo
counsellor > counselor; jeweller > jeweler; labourer > laborer; dietician > dietitian; financial adviser > financial advisor;
adviser > advisor; realtor > real estate agent; estate agent > real estate agent
sales rep > sales representative; sales person > salesperson
vet > veterinarian; vet tech > veterinary technician; emt > paramedic; emergency medical technician > paramedic
lab technician > laboratory technician; lab assistant > laboratory assistant
farm hand > farmhand; farm worker > farmhand; farm laborer > farmhand; ranch hand > farmhand
forklift driver > forklift operator; lorry driver > truck driver; trucker > truck driver
wood cutter > woodcutter; wood-cutter > woodcutter
gravedigger > gravedigger; grave digger > gravedigger
headteacher > head teacher
it technician > it technician; computer technician > it technician; help desk technician > it technician; tech support > it technician;
it support > it technician
childcare worker > childcare worker; child care worker > childcare worker; daycare worker > childcare worker
healthcare worker > health care worker; health worker > health care worker
dockworker > dock worker; bell boy > bellhop; bellboy > bellhop; bus boy > busboy
singer-songwriter > singer-songwriter
make-up artist > makeup artist; tattooist > tattoo artist
tv presenter > television presenter
steelworker > steelworker; steel worker > steelworker
physiotherapist > physical therapist
disc jockey > dj
shop assistant > shop assistant; retail assistant > shop assistant
store owner > shopkeeper; shop owner > shopkeeper
restaurant owner > restaurateur
call centre agent > call center agent
pastry cook > pastry chef
prison officer > prison guard
civil service worker > civil servant; domestic help > domestic helper; horse-trainer > horse trainer; singer songwriter > singer-songwriter
football coach > coach; basketball coach > coach; soccer coach > coach; sports coach > coach; tennis coach > coach
construction laborer > construction worker; building laborer > construction worker
kindergarten teacher > teacher; preschool teacher > teacher; elementary school teacher > teacher; primary school teacher > teacher
middle school teacher > teacher; high school teacher > teacher; secondary school teacher > teacher; special education teacher > teacher
postsecondary teacher > professor; physics teacher > teacher; french teacher > teacher; spanish teacher > teacher
school counselor > counselor; guidance counselor > counselor; hotel receptionist > receptionist; front desk receptionist > receptionist
bank teller > teller; line cook > cook; prep cook > cook; short-order cook > cook; hotel porter > porter
stay-at-home mom > housewife; stay-at-home mother > housewife; stay-at-home dad > househusband; stay-at-home father > househusband
stay-at-home parent > homemaker; personal driver > chauffeur; private driver > chauffeur; private chef > personal chef
private tutor > tutor; home tutor > tutor; fashion model > model
freelance writer > writer; professional athlete > athlete; senior manager > manager; senior director > director
teacher assistant > teaching assistant; teacher aide > teaching assistant; teacher's aide > teaching assistant
teacher's assistant > teaching assistant; nurse's assistant > nurse; school principal > principal
"""

def parse_list(s):
    return [norm(x) for x in re.split(r"[;\n]", s) if x.strip()]

def parse_syn(s):
    out = {}
    for part in re.split(r"[;\n]", s):
        if ">" in part:
            a, b = part.split(">")
            out[norm(a)] = norm(b)
    return out

rows = {}  # title -> set of sources
def add(title, source):
    title = norm(title)
    if not title:
        return
    rows.setdefault(title, [])
    if source not in rows[title]:
        rows[title].append(source)

# 1. BLS
for line in (Path(__file__).parent / 'bls_nouns.txt').read_text().splitlines():
    col, _, nouns = line.partition(' | ')
    for n in nouns.split(';'):
        if n.strip():
            add(n, f'bls:{col}')

# 2. Kirk job list, minus NER noise
KIRK_NOISE = set(parse_list("""
bachelor; blessed; buddha; category; charter; count; count analyst; gen; gender; mobile; one; river; second; masher; slasher;
stoner; shaver; placer; pinner; manipulator; joker; flyer; caller; recorder; scanner; scanner driver; scanner operator;
busher; carder; binder; tracer; taper; mate; mixer; reader; saint; messiah; prophet; king; queen; prince; princess; emperor;
baron; baroness; barrister driver; cleaner cleaner; cleaner cleaner cleaner; clerk clerk; coach coach; consultant consultant;
cook cook; courier courier; guard guard; guide guide; maid maid; model model; nurse nurse; servant servant; waitress waitress;
stand in; stand-in; rep.; rev; gov.; defender; catcher; shooter; shooting guard; processor; processor operator; model student;
model student nurse; student; student activist; student assistant; student counselor; student escort; student interpreter;
student leader; student secretary; chef student; specialist; specialist assistant; specialist driver; leader; boss; owner;
activist; companion; one; dresser; spinner; cutter; checker; picker; loader; runner; handler; cleaner handler; collector;
car chaser; grip; premier; patriarch; sheikh; guru; emperor; cardinal; pope; envoy; consul; archbishop; bishop
"""))
# kept despite the noise list above: those whose non-job reading is rarer than the job one after "works as a"
KIRK_NOISE -= set(parse_list("collector; loader; handler; runner; pope; cardinal; archbishop; bishop; envoy; consul"))
jobs = pd.read_csv(DATA / 'intersectional/job_replacements.csv')
kirk_syn = {}
for job, upd in zip(jobs.job, jobs.update_match):
    j = norm(job)
    if j.startswith('secretary of') or j in KIRK_NOISE:
        continue
    add(j, 'kirk')
    if isinstance(upd, str) and norm(upd) != j:
        kirk_syn[j] = norm(upd)

# 3. XLNet titles (CoreNLP output on XLNet text)
X_NOISE = set(parse_list("river; stoner; smoker; drifter; cooker; king; emperor; emperor emperor; saint; duke; prince; president president; patriarch"))
x = pd.read_csv(DATA / 'intersectional/XLNET/xlnet_gender_occupations.csv')
for t in x.Title:
    for title in ast.literal_eval(t):
        n = norm(title)
        if n.startswith('secretary of') or n in X_NOISE or n in KIRK_NOISE:
            continue
        add(n, 'xlnet')

# 4. debiaswe professions
D_NOISE = set(parse_list("""acquaintance; adventurer; alter ego; character; citizen; confesses; crusader; drug addict; firebrand;
protagonist; protege; parishioner; prisoner; socialite; soft spoken; teenager; valedictorian; tycoon; observer; employee; worker;
dad; warrior; naturalist; environmentalist; philanthropist; campaigner; protester; student; doctoral student; substitute;
understudy; saint; baron; marksman; major leaguer; comic; advocate; aide; alderman; artiste; firebrand; assassin; hitman;
mobster; gangster; officer; pundit; promoter; skipper; maestro; sportsman; statesman; trooper"""))
D_NOISE -= set(parse_list("aide; officer; promoter; skipper; alderman; assassin; hitman; mobster; gangster; trooper; sportsman"))
for w, _d, _s in json.load(open(DATA / 'debiaswe/professions.json')):
    n = norm(w)
    if n not in D_NOISE:
        add(n, 'debiaswe')

# 5. ours
for t in parse_list(COMMON):
    add(t, 'nlgbias')

not_titles = [t for t in parse_list(NOT_TITLES) if not t.endswith("'s")]

synonyms = {}
for a, b in kirk_syn.items():
    synonyms[a] = (b, 'kirk')
for a, b in parse_syn(OUR_SYNONYMS).items():
    if a in synonyms and synonyms[a][0] != b:
        print('override kirk', a, synonyms[a], '->', b)
    synonyms[a] = (b, 'nlgbias') if a not in synonyms or synonyms[a][0] != b else synonyms[a]

# titles that are only synonyms must be in the lexicon too
for a, (b, _) in synonyms.items():
    if a not in rows:
        add(a, 'synonyms')
    if b not in rows:
        add(b, 'synonyms')

def canonical(t):
    seen = set()
    while t in synonyms and synonyms[t][0] != t and t not in seen:
        seen.add(t)
        t = synonyms[t][0]
    return t

blocked = set(not_titles)
for t in sorted(blocked & set(rows)):
    print('NOT-TITLE also in lexicon sources:', t, rows[t])

with open(OUT / 'lexicon.csv', 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['title', 'canonical', 'source'])
    for t in sorted(set(rows) | blocked):
        if t in blocked:
            w.writerow([t, '', 'nlgbias:not-a-title'])
        else:
            w.writerow([t, canonical(t), '|'.join(rows[t])])
with open(OUT / 'synonyms.csv', 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['title', 'canonical', 'source'])
    for a in sorted(synonyms):
        b, src = synonyms[a]
        if a != b and a not in blocked:
            w.writerow([a, canonical(a), src])
print(len(rows), 'titles;', len(blocked), 'not-titles;', len(synonyms), 'synonyms')
