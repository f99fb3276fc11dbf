"""The offline extractor: explicit first-person statements (preferences, goals, facts) → memories.

Deliberately conservative: a clause must start with "I" or "My" and match a known statement shape;
questions, hypotheticals, requests and passing states ("I'm tired") are skipped. Each accepted clause
is rewritten in the third person ("I love hiking" → "User loves hiking"). Measured on
tests/data/extraction_labeled.jsonl by `manage.py evaluate_extraction` (docs/EVALUATION.md).
"""

from __future__ import annotations

import calendar
import re

from memory_app.extraction.types import ExtractedMemory

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE = re.compile(r"\s*(?:,|;)?\s+(?:and|but|so)\s+(?=(?:I|I'm|I've|I'd|my|My)\b)|;\s*")
_LEAD = re.compile(r"^(?:and|but|so|also|actually|well|oh|btw|by the way|honestly)\b[,\s]*", re.I)
ADVERBS = r"(?:really|usually|always|often|also|just|actually|absolutely|definitely|generally|still|never)"

# Clauses that look like statements about the user but are not memories.
_SKIP = re.compile(
    r"^(?:I(?:'d|\s+would)\s+like\s+to\s+(?:know|ask|see|hear|check|understand|find\s+out)\b|"
    r"I\s+(?:think|guess|wonder|suppose|mean|see|know|agree|understand|need\s+to|have\s+to|"
    r"was\s+wondering|"
    r"want\s+to\s+(?:know|ask|see|hear|check|understand|find\s+out)|love\s+(?:it|that|this)|"
    r"like\s+(?:it|that|this)|can(?!'t)|could|will)\b|I'll\b|"
    r"I(?:'m|\s+am)\s+(?:not\s+sure|sure|sorry|glad|tired|fine|ok|okay|good|great|hungry|bored|busy|"
    r"here|back|done|ready|confused|curious|looking|going\s+to\s+the|just\s+(?:asking|checking|curious))\b|"
    r"let\s+me\b|if\b|when\b|maybe\b)",
    re.I,
)

_THIRD_PERSON_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "was": "was"}
PREFERENCE_VERBS = "love|like|enjoy|prefer|adore|hate|dislike|detest|loathe"
FACT_VERBS = (
    "live|work|was|moved|grew|speak|own|have|drink|eat|quit|got|go|wake|run|walk|swim|cycle|bike|"
    "study|teach|play|use|take|cook|smoke|sleep|finished|started|stopped|lost|gained|bought|sold|"
    "met|married|graduated|retired|skip|train|do|wear|drive|ride|practice|volunteer|coach|write|read"
)
PERSONAL_STATES = (
    r"allergic|vegetarian|vegan|pescatarian|lactose|gluten|celiac|diabetic|married|single|divorced|"
    r"widowed|engaged|pregnant|retired|unemployed|self-employed|left-handed|right-handed|colou?r[- ]blind|"
    r"from|based\s+in|originally"
)
GOAL_PROGRESSIVE = r"trying|planning|aiming|training|learning|saving|hoping|preparing|studying|working\s+on"

_PATTERNS: list[tuple[str, re.Pattern[str], str]] = [
    # (event_type, pattern, template); the template's {rest} is the rewritten remainder.
    ("goal", re.compile(r"^my\s+goal\s+is\s+(?P<rest>.+)", re.I), "User's goal is {rest}"),
    ("goal", re.compile(r"^my\s+goal\s+(?P<rest>\w+.+)", re.I), "User's goal {rest}"),
    (
        "preference",
        re.compile(r"^I\s+want\s+you\s+to\s+(?P<rest>.+)", re.I),
        "User wants the assistant to {rest}",
    ),
    (
        "goal",
        re.compile(
            rf"^I\s+(?P<adv>{ADVERBS}\s+)?(?P<verb>want|hope|plan|intend|aim|mean)\s+to\s+(?P<rest>.+)", re.I
        ),
        "User {adv}{verb_s} to {rest}",
    ),
    (
        "goal",
        re.compile(r"^I(?:'d|\s+would)\s+(?:really\s+)?(?:like|love)\s+to\s+(?P<rest>.+)", re.I),
        "User would like to {rest}",
    ),
    (
        "goal",
        re.compile(rf"^I(?:'m|\s+am)\s+(?P<state>{GOAL_PROGRESSIVE})\b\s*(?P<rest>.*)", re.I),
        "User is {state} {rest}",
    ),
    (
        "preference",
        re.compile(r"^I(?:'d|\s+would)\s+rather\s+(?P<rest>.+)", re.I),
        "User would rather {rest}",
    ),
    (
        "preference",
        re.compile(r"^I(?:'m|\s+am)\s+(?P<rest>(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+.+)", re.I),
        "User is {rest}",
    ),
    ("preference", re.compile(r"^my\s+fav(?:ou?rite)?\s+(?P<rest>.+)", re.I), "User's favorite {rest}"),
    (
        "preference",
        re.compile(
            r"^I\s+(?P<neg>don't|do\s+not|can't|cannot)\s+(?P<verb>like|enjoy|love|stand|bear)\s+(?P<rest>.+)",
            re.I,
        ),
        "User {neg_s} {verb} {rest}",
    ),
    (
        "preference",
        re.compile(rf"^I\s+(?P<adv>{ADVERBS}\s+)?(?P<verb>{PREFERENCE_VERBS})\s+(?P<rest>.+)", re.I),
        "User {adv}{verb_s} {rest}",
    ),
    ("fact", re.compile(r"^my\s+name\s+is\s+(?P<rest>.+)", re.I), "User's name is {rest}"),
    ("fact", re.compile(r"^I(?:'m|\s+am)\s+(?P<rest>\d+\s+(?:years?\s+old|yo)\b.*)", re.I), "User is {rest}"),
    ("fact", re.compile(rf"^I(?:'m|\s+am)\s+(?P<rest>(?:{PERSONAL_STATES})\b.*)", re.I), "User is {rest}"),
    (
        "fact",
        re.compile(r"^I(?:'m|\s+am)\s+(?P<rest>an?\s+(?!bit\b|little\b|lot\b).+)", re.I),
        "User is {rest}",
    ),
    ("fact", re.compile(r"^I(?:'ve|\s+have)\s+been\s+(?P<rest>.+)", re.I), "User has been {rest}"),
    (
        "fact",
        re.compile(
            r"^I\s+(?P<neg>don't|do\s+not|never)\s+(?P<verb>eat|drink|smoke|drive|own|have)\s+(?P<rest>.+)",
            re.I,
        ),
        "User {neg_s} {verb} {rest}",
    ),
    (
        "fact",
        re.compile(rf"^I\s+(?P<adv>{ADVERBS}\s+)?(?P<verb>{FACT_VERBS})\b\s*(?P<rest>.*)", re.I),
        "User {adv}{verb_s} {rest}",
    ),
    (
        "fact",
        re.compile(
            r"^my\s+(?P<what>(?:\w+\s+){0,2}?\w+)\s+(?P<verb>is|are|was|were|has|have|lives|works|plays|hurts|"
            r"told|said|studies|wants|loves|likes)\b\s*(?P<rest>.*)",
            re.I,
        ),
        "User's {what} {verb} {rest}",
    ),
]

_PRONOUNS = [
    (re.compile(r"\bI'm\b"), "they're"),
    (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI'd\b"), "they'd"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bme\b", re.I), "them"),
]

TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "food": (
        "food",
        "eat",
        "meat",
        "vegetarian",
        "vegan",
        "sushi",
        "cook",
        "breakfast",
        "lunch",
        "dinner",
        "sugar",
        "coffee",
        "tea",
        "pork",
        "cilantro",
        "spicy",
        "recipe",
        "lactose",
        "peanut",
        "diet",
    ),
    "fitness": (
        "run",
        "running",
        "marathon",
        "hiking",
        "workout",
        "gym",
        "swim",
        "climbing",
        "yoga",
        "10k",
        "triathlon",
        "training",
        "walk",
        "exercise",
        "soccer",
        "treadmill",
    ),
    "health": (
        "allergic",
        "diabetes",
        "cholesterol",
        "doctor",
        "sleep",
        "knee",
        "weight",
        "kilos",
        "kg",
        "smoking",
        "meditat",
        "intolerant",
        "pain",
        "hurts",
    ),
    "family": (
        "wife",
        "husband",
        "kids",
        "son",
        "daughter",
        "brother",
        "sister",
        "married",
        "partner",
        "mother",
        "father",
        "children",
    ),
    "work": ("work", "job", "nurse", "engineer", "promoted", "team lead", "office", "shift"),
    "travel": ("trip", "visit", "travel", "moved", "japan", "mexico", "berlin", "lisbon"),
    "music": ("jazz", "music", "piano", "guitar", "song"),
}


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _THIRD_PERSON_IRREGULAR:
        return _THIRD_PERSON_IRREGULAR[low]
    if low.endswith("ed") or low in {"got", "quit", "met", "lost", "sold", "bought", "grew", "ran"}:
        return low  # already past tense
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return low + "es"
    if re.search(r"[^aeiou]y$", low):
        return low[:-1] + "ies"
    return low + "s"


def _negation(neg: str) -> str:
    low = neg.lower().replace("do not", "don't")
    return {"don't": "doesn't", "can't": "can't", "cannot": "cannot", "never": "never"}.get(low, low)


def _rewrite(rest: str) -> str:
    for pattern, replacement in _PRONOUNS:
        rest = pattern.sub(replacement, rest)
    return rest


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".!,;:").strip()


def topics_of(text: str) -> tuple[str, ...]:
    low = text.lower()
    return tuple(sorted(t for t, words in TOPIC_WORDS.items() if any(w in low for w in words)))


# Weekday and month names are capitalised but name a time, not a person, place or thing. From the
# calendar module (English under the C locale), not a hand-written list.
CALENDAR_WORDS = frozenset(w.casefold() for w in (*calendar.day_name, *calendar.month_name) if w)


def not_calendar(names: set[str] | tuple[str, ...] | list[str]) -> set[str]:
    """The names without weekday and month names ("Friday", "June's")."""
    return {n for n in names if n.casefold().removesuffix("'s") not in CALENDAR_WORDS}


def entities_of(text: str) -> tuple[str, ...]:
    """Capitalised words not opening the text (names, places): a cheap stand-in for NER."""
    found = {m.group(0) for m in re.finditer(r"\b[A-Z][a-zA-Z'-]+\b", text) if m.start() > 0}
    return tuple(sorted(not_calendar(found - {"User", "I'm", "I've", "I'd", "I'll"})))


def _clauses(message: str) -> list[str]:
    out = []
    for sentence in _SENTENCE.split(message.strip()):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for clause in _CLAUSE.split(sentence):
            clause = _LEAD.sub("", clause.strip()).strip()
            if clause:
                out.append(clause)
    return out


def extract_statement(clause: str) -> ExtractedMemory | None:
    """One clause → a memory, or None when it is not an explicit statement about the user."""
    clause = _clean(clause.replace("\u2019", "'"))
    if _SKIP.match(clause):
        return None
    for event_type, pattern, template in _PATTERNS:
        m = pattern.match(clause)
        if not m:
            continue
        groups = m.groupdict()
        rest = _rewrite(groups.get("rest") or "")
        if not rest and "{rest}" in template and not template.endswith("{rest}"):
            continue
        values = {
            "rest": rest,
            "adv": (groups.get("adv") or "").lower(),
            "verb": (groups.get("verb") or "").lower(),
            "verb_s": _third_person(groups.get("verb") or ""),
            "neg_s": _negation(groups.get("neg") or ""),
            "state": (groups.get("state") or "").lower(),
            "what": _rewrite(groups.get("what") or "").lower(),
        }
        text = _clean(template.format(**values))
        if len(text.split()) < 3:
            continue
        if event_type == "fact" and re.match(r"^User (?:\w+ )?(?:go|goes) to the\b", text):
            continue  # "I go to the store": an errand, not a fact
        return ExtractedMemory(
            text=text,
            event_type=event_type,
            topics=topics_of(text),
            entities=entities_of(clause),
            confidence=0.6,
        )
    return None


def extract_rules(user_message: str) -> list[ExtractedMemory]:
    """Memories stated by the user in `user_message` (the assistant's reply is not evidence)."""
    found: list[ExtractedMemory] = []
    seen: set[str] = set()
    for clause in _clauses(user_message):
        memory = extract_statement(clause)
        if memory is not None and memory.text.lower() not in seen:
            seen.add(memory.text.lower())
            found.append(memory)
    return found
