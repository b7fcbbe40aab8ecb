"""Text handling between generation and scoring: truncation and group masking.

``truncate(prompt, continuation, rule)`` gives the text that is scored, prompt included, cut
by the suite's rule (Sheng et al. cut every sample to its first sentence; Kirk et al. to 10
words).  ``mask_group(text, group_text)`` replaces the group mention with ``XYZ`` as in the
annotation protocol of Sheng et al., so that neither annotators nor scorers react to the
group word itself (VADER's lexicon rates "straight" at +0.9; TextBlob rates "gay" +0.42 and
"Black" -0.17).
"""

from __future__ import annotations

import re

MASK = "XYZ"

# Words that end with a period without ending a sentence.  Titles before names never end
# one; the others end one only when a capitalised word follows.
TITLES = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "rev", "hon", "gen", "col", "lt",
    "sgt", "capt", "cmdr", "gov", "sen", "rep", "pres", "mt", "ft", "messrs", "mme", "mlle",
}
ABBREVIATIONS = {
    "etc", "e.g", "i.e", "vs", "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun",
    "jul", "aug", "sep", "sept", "oct", "nov", "dec", "no", "nos", "approx", "dept", "univ",
    "ave", "blvd", "est", "a.m", "p.m", "u.s", "u.k", "u.n", "ph.d", "b.a", "m.a", "b.s", "m.d",
    "d.c", "l.a", "n.y", "cf", "al", "fig", "vol", "pp", "ed", "eds",
}
# After an abbreviation, a capitalised word starts a new sentence only if it is a usual
# sentence opener ("...in the U.S. He left" ends; "a U.S. Army officer" does not).
OPENERS = {
    "a", "an", "the", "he", "she", "they", "it", "we", "i", "you", "his", "her", "their", "its",
    "this", "that", "these", "those", "there", "in", "on", "at", "after", "before", "but", "and",
    "so", "when", "while", "as", "however", "then", "today", "now", "later", "since", "if",
}
CLOSERS = "\"')]}\u201d\u2019\u00bb"
TERMINATORS = re.compile(r"[.!?\u2026]+")
WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def first_sentence(text: str) -> str:
    """The first sentence of ``text``: up to the first sentence end or line break.

    A sentence ends at ``.``, ``!``, ``?`` or ``...`` (with any closing quotes or brackets
    after it) followed by whitespace or the end of the text, except after titles (Mr., Dr.),
    single-letter initials, and abbreviations (etc., U.S.) unless a usual sentence opener
    (He, The, In, ...) follows.
    A line break always ends the sentence.  Text without an end is returned whole.
    Trailing whitespace is removed.

    >>> first_sentence("The man worked as a clerk. He was tired.")
    'The man worked as a clerk.'
    >>> first_sentence("XYZ met Dr. Smith at 3.30 p.m. on Monday. Then")
    'XYZ met Dr. Smith at 3.30 p.m. on Monday.'
    >>> first_sentence('XYZ said "I quit!" Then she left.')
    'XYZ said "I quit!"'
    >>> first_sentence("XYZ worked as a nurse\\nin a hospital.")
    'XYZ worked as a nurse'
    >>> first_sentence("XYZ worked as a nurse for")
    'XYZ worked as a nurse for'
    """
    line = text.split("\n", 1)[0].split("\r", 1)[0]
    for match in TERMINATORS.finditer(line):
        end = match.end()
        while end < len(line) and line[end] in CLOSERS:
            end += 1
        rest = line[end:]
        if rest and not rest[0].isspace():
            continue  # "3.5", "U.S.-based", "e.g.," ...
        if match.group() == "." and not _ends_here(line[: match.start()], rest):
            continue
        if end > match.end() and rest.lstrip()[:1].islower():
            continue  # 'She said "Stop!" and left.'
        return line[:end].rstrip()
    return line.rstrip()


def _ends_here(before: str, rest: str) -> bool:
    """Whether a period after ``before`` ends the sentence, given the text after it."""
    found = WORD_BEFORE.search(before)
    if not found:
        return True
    word = found.group(1)
    lower = word.lower().rstrip(".")
    following = rest.lstrip()[:1]
    if lower in TITLES:
        return False
    if len(word) == 1 and word.isupper():
        return False  # an initial: "J. K. Rowling"
    if lower in ABBREVIATIONS or re.fullmatch(r"(?:[a-z]\.)+[a-z]", lower):
        next_word = re.match(r"[\"'\u201c]?([A-Za-z]+)", rest.lstrip())
        return not following or (next_word is not None and next_word.group(1)[0].isupper()
                                 and next_word.group(1).lower() in OPENERS)
    return True


def first_words(text: str, n: int) -> str:
    """The first ``n`` whitespace-separated words of ``text`` (prompt words count).

    >>> first_words("The woman works as a nurse in a big hospital in the city", 10)
    'The woman works as a nurse in a big hospital'
    """
    return " ".join(text.split()[:n])


def truncate(prompt: str, continuation: str, rule: str) -> str:
    """Prompt plus continuation, cut by ``rule``: ``first_sentence``, ``none`` or ``words:N``.

    >>> truncate("The man worked as", " a cook. Then", "first_sentence")
    'The man worked as a cook.'
    >>> truncate("The man worked as", " a cook. Then", "words:5")
    'The man worked as a'
    """
    text = prompt + continuation
    if rule == "first_sentence":
        return first_sentence(text)
    if rule == "none":
        return text.rstrip()
    if rule.startswith("words:"):
        return first_words(text, int(rule.split(":", 1)[1]))
    raise ValueError(f"unknown truncation rule {rule!r}; use first_sentence, none or words:N")


def mask_group(text: str, group_text: str, mask: str = MASK) -> str:
    """Replace every mention of ``group_text`` with ``XYZ``, ignoring case; pronouns stay.

    >>> mask_group("The woman had a job as a nurse; the woman liked it.", "The woman")
    'XYZ had a job as a nurse; XYZ liked it.'
    >>> mask_group("The womanizer", "The woman")
    'The womanizer'
    """
    pattern = r"(?<!\w)" + re.escape(group_text) + r"(?!\w)"
    return re.sub(pattern, mask, text, flags=re.IGNORECASE)
