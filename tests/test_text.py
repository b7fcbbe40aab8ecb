"""Truncation to the first sentence (and to N words), and group masking."""

from __future__ import annotations

import pytest

from nlgbias.text import first_sentence, mask_group, truncate


@pytest.mark.parametrize("text, expected", [
    ("The man worked as a clerk. He was tired.", "The man worked as a clerk."),
    ("The man worked as a clerk", "The man worked as a clerk"),                       # no period
    ("The man worked as a clerk   ", "The man worked as a clerk"),
    ("The man worked as a clerk!! Then", "The man worked as a clerk!!"),
    ("Was the man a clerk? Yes.", "Was the man a clerk?"),
    ("The man worked as a clerk.", "The man worked as a clerk."),
    ("The man met Mr. Smith and Dr. Jones. Later", "The man met Mr. Smith and Dr. Jones."),  # titles
    ("The man met J. K. Rowling in London. Later", "The man met J. K. Rowling in London."),  # initials
    ("The man moved to the U.S. in 2003. He", "The man moved to the U.S. in 2003."),       # acronym + lower
    ("The man sold fruit, vegetables, etc. and more. Then", "The man sold fruit, vegetables, etc. and more."),
    ("The man earned 3.5 million dollars. Then", "The man earned 3.5 million dollars."),   # decimals
    ("The man worked at e.g. a bank. Then", "The man worked at e.g. a bank."),
    ("The man said \"I quit.\" Then he left.", "The man said \"I quit.\""),                  # closing quote
    ("The man said \"Stop!\" and left. Then", "The man said \"Stop!\" and left."),
    ("The man said 'hi.' He left.", "The man said 'hi.'"),
    ("The man (a cook.) left. Then", "The man (a cook.) left."),
    ("The man (a cook.) Then he left.", "The man (a cook.)"),
    ("The man worked as a nurse\nat the hospital. Then", "The man worked as a nurse"),    # newline
    ("The man worked as\n\nA nurse.", "The man worked as"),
    ("The man worked as a cook\r\nthen", "The man worked as a cook"),
    ("The man waited... Then he left.", "The man waited..."),
    ("The man worked as a U.S. Army officer. Then", "The man worked as a U.S. Army officer."),
    ("The man moved to the U.S. He was happy.", "The man moved to the U.S."),
    ("The man sold cars, boats, etc. The end.", "The man sold cars, boats, etc."),
    ("", ""),
])
def test_first_sentence(text, expected):
    assert first_sentence(text) == expected


def test_truncate_joins_prompt_and_continuation():
    assert truncate("The woman worked as", " a nurse. She", "first_sentence") == "The woman worked as a nurse."
    assert truncate("The woman worked as", "", "first_sentence") == "The woman worked as"
    assert truncate("The woman works as a", " nurse in a big city hospital and she", "words:10") == \
        "The woman works as a nurse in a big city"
    assert truncate("The woman worked as", " a nurse.\nNext", "none") == "The woman worked as a nurse.\nNext"
    with pytest.raises(ValueError):
        truncate("a", "b", "paragraph")


@pytest.mark.parametrize("text, group, expected", [
    ("The woman had a job as a nurse.", "The woman", "XYZ had a job as a nurse."),
    ("the woman had a job; THE WOMAN left.", "The woman", "XYZ had a job; XYZ left."),
    ("The Black person was known for his kindness.", "The Black person", "XYZ was known for his kindness."),
    ("The womanizer left.", "The woman", "The womanizer left."),
    ("The man (Mr. X) was known", "The man", "XYZ (Mr. X) was known"),
])
def test_mask_group(text, group, expected):
    assert mask_group(text, group) == expected
