"""Final-answer extraction and normalization: string work only, no sympy.

This runs in the training process on untrusted model text, so inputs are
capped first and every regex is linear (bounded or non-overlapping repeats).
Nothing here evaluates text; the worker processes parse what it returns.

Completion chain (``extract_answer``), first hit wins:

1. the last ``<answer>...</answer>`` block (an unclosed one runs to the end);
   inside it, the same chain from step 3, else the whole block;
2. otherwise the text after the last ``</think>`` (an unclosed ``<think>``
   means there is no answer yet);
3. the ``\\boxed{...}`` / ``\\fbox{...}`` boxes (balanced braces): one distinct
   content is the answer; several are the set of them, however they are joined
   or far apart (so "either \\boxed{72} or \\boxed{73}", "\\boxed{3}. Wait:
   \\boxed{4}" and "\\boxed{70} \\boxed{71}" are sets: a hedge is never paid);
4. the last ``#### x`` line (GSM8K);
5. the last explicit phrase: "final answer is / final answer: / answer: /
   the answer (to ...) is / \"answer\": x" up to the end of the sentence;
6. a completion that is nothing but a number ("42", "-3.5", "1/2");
7. with ``fallback_last_number=True``, the last number in the text, unless its
   line hedges ("maybe", "perhaps", "possibly", "probably", "might", "either",
   "or", "guess").

In steps 3-5 a retraction ("Wait, I made an error", "that is wrong") withdraws the
answers of that layout before it: "\\boxed{15}. Wait, I made an error ...
\\boxed{16}" answers 16, as the same correction with ``####`` or "Answer:" lines
does. A retraction is an admission that an answer was wrong, not a hedge: boxes
with only "wait", "actually" or "or" between them stay a set (``_standing``).

Gold chain (``prepare_gold``): ``#### x`` rationale, else its boxes (several:
a set, so a multi-box gold needs all its parts), else the whole string; then classified as a text answer
("Paris", "yes") or a math answer, normalized the same way as completions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

from grpo_core.text import BOX_RE, boxes, group_end, hash_answer

MAX_TEXT_CHARS = 100_000  # longer completions keep their last 100k characters
MAX_ANSWER_CHARS = 1_000  # a longer extracted answer is not parsed (scores 0)
MAX_NESTING = 8  # deeper bracket nesting is not parsed: antlr time grows exponentially

# ---------------------------------------------------------------------------
# extraction


@dataclass(frozen=True)
class Extraction:
    """The final answer found in a completion and where it came from.

    ``source`` is one of ``answer_tag``, ``boxed``, ``hash``, ``phrase``, ``bare``
    (the whole completion is a number), ``last_number`` or ``none`` (no answer
    found; ``answer`` is then None).
    """

    answer: str | None
    source: str


_PHRASE_RE = re.compile(
    r"final\s+answer\b[\s*_\"'`]*(?:is\b|[:=])?"
    r"|\banswer\b[\s*_\"'`]*(?:[:=]|is\b)"
    r"|\banswer\b[^\n.:=$\\]{1,40}?\s(?:is|would\s+be|will\s+be)\b",
    re.IGNORECASE,
)
_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)|\n|(?i:\bI hope\b)")
# second thoughts on an answer's own line ("Answer: 72. No, wait: 73"): the line negates itself
_DOUBT_RE = re.compile(r"\b(?:no|not|wait|actually|wrong|incorrect|mistake|oops|rather)\b", re.IGNORECASE)
# A retraction: the text says that what it answered was wrong ("Wait, I made an error",
# "that is wrong", "my mistake"). Only such an admission retracts; "wait", "actually" or
# "no" alone do not, nor does "no mistake" ("\boxed{3}. Wait: \boxed{4}" stays a hedge).
_RETRACTION_RE = re.compile(
    r"\b(?:(?:I|we)(?:\s+have|\s+had|'ve)?\s+made\s+(?:an?\s+(?:\w+\s+)?|some\s+)?(?:error|mistake)s?"
    r"|(?:is|was|are|were|'s)\s+(?:wrong|incorrect|not\s+(?:right|correct)|an?\s+(?:error|mistake))"
    r"|(?:isn|wasn|aren)'?t\s+(?:right|correct)|my\s+(?:mistake|error)|I\s+was\s+wrong"
    r"|I\s+mis(?:calculated|computed|counted|read|added|multiplied)|correction\s*:)",
    re.IGNORECASE,
)
_HASH_RE = re.compile("####")
_HEDGE_RE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|might|either|or|guess)\b", re.IGNORECASE)
_NUMBER_RE = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
# a completion that is nothing but a number: "42", " -3.5 \n", "1,234.", "- 5", "1/2" (a
# fraction of integers is one value, compared exactly; "4/2" against 2 is still arithmetic
# left undone, as in a box)
_BARE_NUMBER_RE = re.compile(r"[-+]?[ \t]?(?:\d{1,3}(?:,\d{3})+|\d{1,40})(?:\.\d{1,40}|[ \t]?/[ \t]?\d{1,40})?\.?")


def extract_answer(text: str, fallback_last_number: bool = False) -> Extraction:
    """The final answer of one completion text by the chain in the module docstring."""
    if not isinstance(text, str) or not text:
        return Extraction(None, "none")
    if len(text) > MAX_TEXT_CHARS:
        text = text[-MAX_TEXT_CHARS:]
    lower = text.lower()
    start = lower.rfind("<answer>")
    if start >= 0:
        end = lower.find("</answer>", start)
        region = text[start + len("<answer>") : end if end >= 0 else len(text)].strip()
        if not region:
            return Extraction(None, "none")
        inner = _answer_in(region)
        if inner is not None:
            return Extraction(inner[0], "answer_tag")
        if len(region) <= MAX_ANSWER_CHARS:
            return Extraction(region, "answer_tag")
        return Extraction(None, "none")
    close = lower.rfind("</think>")
    if close >= 0:
        text = text[close + len("</think>") :]
    elif "<think>" in lower:
        return Extraction(None, "none")  # still thinking: no final answer yet
    found = _answer_in(text)
    if found is not None:
        return Extraction(found[0], found[1])
    bare = text.strip()
    if len(bare) <= 100 and _BARE_NUMBER_RE.fullmatch(bare):
        return Extraction(bare.rstrip("."), "bare")
    if fallback_last_number:
        last = None
        for m in _NUMBER_RE.finditer(text):
            last = m
        if last is not None:
            line = text[text.rfind("\n", 0, last.start()) + 1 : last.end()]
            if _HEDGE_RE.search(line):
                return Extraction(None, "none")  # "maybe 72", "72 or 73": no committed answer
            return Extraction(last.group(0), "last_number")
    return Extraction(None, "none")


def _answer_in(text: str) -> tuple[str, str] | None:
    boxed = final_boxes(_standing(text, BOX_RE))
    if boxed is not None:
        return boxed, "boxed"
    line = hash_answer(_standing(text, _HASH_RE))
    if line:
        return line, "hash"
    phrase = _after_phrase(_standing(text, _PHRASE_RE))
    if phrase:
        return phrase, "phrase"
    return None


def _standing(text: str, marker: re.Pattern) -> str:
    """The part of ``text`` whose answers of one layout (``marker``: a box, ``####``, an
    answer phrase) still stand: after the last retraction that such an answer follows.
    The same rule for every layout: "\\boxed{15}. Wait, I made an error ... \\boxed{16}"
    answers 16 as "#### 15 ... #### 16" and "Answer: 15 ... Answer: 16" do (those read
    their last answer anyway); boxes with no retraction between them stay a set (a hedge)."""
    last = None
    for m in marker.finditer(text):
        last = m
    cut = 0
    if last is not None:
        for retraction in _RETRACTION_RE.finditer(text, 0, last.start()):
            cut = retraction.end()
    return text[cut:]


MAX_BOXES = 20


def final_boxes(text: str) -> str | None:
    """Every distinct boxed answer of ``text``: one -> its content; several -> the
    set of them, ``a, b`` (``\\boxed{72} \\text{or} \\boxed{73}``, boxes in a row: a
    hedge, never paid as one of its parts; a multi-part gold: all of its parts; a box
    retracted by a later one never gets here: ``_standing`` cuts it off first). A box repeated with the same content counts
    once; a box nested in another is part of it. A truncated last box is no answer."""
    found = boxes(text)
    if not found or found[-1] is None:
        return None
    contents: list[str] = []
    for content in found:
        if content is not None and content not in contents and len(contents) < MAX_BOXES:
            contents.append(content)
    return contents[0] if len(contents) == 1 else ", ".join(contents)


def _after_phrase(text: str) -> str | None:
    last = None
    for m in _PHRASE_RE.finditer(text):
        rest = text[m.end() : m.end() + 4 * MAX_ANSWER_CHARS]
        if rest.strip(" \t*_:\"'`"):
            last = rest
    if last is None:
        return None
    rest = last.lstrip(" \t*_:\"'`")
    if rest.startswith("\n"):
        rest = rest.strip()
    cut = _cut_sentence(rest)
    line = rest.split("\n", 1)[0]
    if _DOUBT_RE.search(line[len(cut):]):
        cut = line  # "Answer: 72. No, wait: 73": the whole line, which negates itself
    for _ in range(3):  # '"answer": "17.5"},' -> 17.5
        cut = cut.strip().strip("*_`").strip().rstrip(",;:").strip().strip("\"'").strip()
        cut = _drop_unbalanced_closers(cut)
    return cut or None


def _cut_sentence(s: str) -> str:
    """Up to the end of the sentence, ignoring periods inside $...$ and \\(...\\)."""
    out = []
    i = 0
    in_dollar = False
    while i < len(s):
        if s.startswith("\\(", i) or s.startswith("\\[", i):
            end = s.find("\\)" if s[i + 1] == "(" else "\\]", i + 2)
            if end < 0:
                end = len(s) - 2
            out.append(s[i : end + 2])
            i = end + 2
            continue
        ch = s[i]
        if ch == "$" and (i == 0 or s[i - 1] != "\\"):
            in_dollar = not in_dollar
        elif not in_dollar:
            m = _SENTENCE_END_RE.match(s, i)
            if m:
                break
        out.append(ch)
        i += 1
    return "".join(out)


def _drop_unbalanced_closers(s: str) -> str:
    """'"answer": 17.5}' (JSON) or '(which is 5)': trailing closers with no opener go.
    An interval's closer need not match its opener: ``(0, 4]`` and ``[1, 2)`` keep theirs."""
    while s and s[-1] in ")]}" and _unmatched(s, s[-1]) > 0:
        s = s[:-1].rstrip()
    return s


def _unmatched(s: str, bracket: str) -> int:
    """Closers of ``bracket``'s kind in ``s`` minus openers (``(`` and ``[`` are one kind,
    as an interval mixes them; ``{}`` another)."""
    if bracket in "{}":
        return s.count("}") - s.count("{")
    return s.count(")") + s.count("]") - s.count("(") - s.count("[")


# ---------------------------------------------------------------------------
# normalization to a math string for the checker

_UNICODE = {
    "\u2212": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\ufe63": "-",
    "\uff0d": "-",
    "\u00d7": r" \times ",
    "\u22c5": r" \cdot ",
    "\u00b7": r" \cdot ",
    "\u00f7": r" \div ",
    "\u03c0": r" \pi ",
    "\u221e": r" \infty ",
    "\u2264": r" \le ",
    "\u2265": r" \ge ",
    "\u2260": r" \ne ",
    "\u2248": r" \approx ",
    "\u00b0": r"^\circ ",
    "\u00b2": "^2",
    "\u00b3": "^3",
    "\u00bd": r"\frac{1}{2}",
    "\u00bc": r"\frac{1}{4}",
    "\u00be": r"\frac{3}{4}",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
    "\u2007": " ",
    "\u200b": "",
    "\u2208": r" \in ",
    "\u222a": r" \cup ",
    "\u2229": r" \cap ",
    "\u00b1": r" \pm ",
    "\u20ac": "",
    "\u00a3": "",
    "\u00a5": "",
    "\u20b9": "",
}
_UNICODE_RE = re.compile("|".join(re.escape(k) for k in _UNICODE))
_SQRT_RE = re.compile(r"\u221a\s*(\d+(?:\.\d+)?|[A-Za-z]|\([^()]{0,200}\)|\{[^{}]{0,200}\})")

# words that are mathematics, not prose
MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp sqrt pi "
    "infty inf infinity mod pmod gcd lcm max min det lim frac dfrac tfrac cdot times div "
    "le ge ne leq geq neq lt gt approx circ pm mp cup cap in emptyset varnothing".split()
)
# short English words that make a string prose even though they have two letters
_SHORT_WORDS = frozenset(
    "is of to in it at an be by we so as if on no my he me us am do go or and "
    "cm mm km kg mg ml lb oz ft hr mi yd".split()
)
_TEXT_CMD_RE = re.compile(
    r"\\(?:text|textbf|textit|textnormal|textrm|textsf|texttt|mathrm|mathbf|mbox|operatorname)\s*\{[^{}]{0,200}\}"
)
_CMD_RE = re.compile(r"\\[A-Za-z]+")
_ENV_RE = re.compile(r"\\(?:begin|end)\s*\{[A-Za-z*]{1,20}\}")
_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_NEGATION_RE = re.compile(
    r"\b(?:not|isn'?t|aren'?t|wasn'?t|never|neither|nor|cannot|can'?t|no|none|impossible|"
    r"incorrect|wrong|false|maybe|perhaps|possibly|unsure|guess)\b",
    re.IGNORECASE,
)
_WORD_CONST_RE = re.compile(r"(?<![\\A-Za-z])(?:infinity|pi)(?![A-Za-z])", re.IGNORECASE)
_AND_OR_RE = re.compile(r"\s*,?\s*\b(?:and|or)\b\s*", re.IGNORECASE)
_PERCENT_WORD_RE = re.compile(r"\s*\b(?:percent|per\s+cent|pct)\b", re.IGNORECASE)
_THOUSANDS_RE = re.compile(r"(?<![\d.,(\[{])([1-9]\d{0,2}(?:,\d{3})+)(?![\d,)\]}])(?!\.\d*,)")
_NUMBER_RUN_RE = re.compile(r"-?\d+(?:\.\d+)?(?:\s+-?\d+(?:\.\d+)?)+")
_SPACE_THOUSANDS_RE = re.compile(r"^[1-9]\d{0,2}(?: \d{3})+$")  # "1 000 000"
# "\text{ and }", "\quad\text{or}\quad": a connective, not a unit
_TEXT_CONNECTIVE_RE = re.compile(
    r"(?:\\(?:quad|qquad|[,;:! ])\s*)*\\(?:text|textnormal|textrm|mathrm|mbox)\s*\{\s*(and|or)\s*\}"
    r"(?:\s*\\(?:quad|qquad|[,;:! ]))*",
    re.IGNORECASE,
)
_THIN_THOUSANDS_RE = re.compile(r"(?<=\d)(?:\\,|\{,\}|\\ |\\!)(?=\d{3}(?!\d))")
_SCI_RE = re.compile(r"(?<![\w\\.])(\d+(?:\.\d+)?)\s*[eE]\s*([-+]?\d{1,4})(?![\w.])")
_TIMES_TEN_RE = re.compile(
    r"(\d)\s*(?:[xX*]|\\times|\\cdot)\s*10\s*\^\s*\{?\s*([-+]?\d{1,4})\s*\}?"
)
# $..$ spans skip an escaped dollar: "$ \frac{1}{2} \$ = \frac{10}{9} $" is one span, not "$ \frac{1}{2} \$"
_DELIM_RE = re.compile(
    r"\$\$(.{1,2000}?)\$\$|\\\((.{1,2000}?)\\\)|\\\[(.{1,2000}?)\\\]|(?<!\\)\$((?:\\\$|[^$]){1,2000}?)(?<!\\)\$",
    re.DOTALL,
)
# a formula that only names something: n, a_n, x_{1}, f(x), g(x, y) (no value of its own)
_NAME_RE = re.compile(r"\s*[A-Za-z](?:_\{?[A-Za-z0-9]{1,10}\}?)?(?:\(\s*[A-Za-z](?:\s*,\s*[A-Za-z]){0,5}\s*\))?\s*")
_STOP_TOKENS = frozenset({"a", "A", "I"})


def normalize_unicode(s: str) -> str:
    s = _SQRT_RE.sub(lambda m: r"\sqrt{" + m.group(1).strip("{}") + "}", s)
    return _UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], s)


def prose_words(s: str) -> list[str]:
    """Words in ``s`` that are not mathematics (text inside \\text{} is ignored)."""
    s = _CMD_RE.sub(" ", _TEXT_CMD_RE.sub(" ", _ENV_RE.sub(" ", s)))
    words = []
    for w in _WORD_RE.findall(s):
        lw = w.lower()
        if lw in MATH_WORDS or (w.isupper() and len(w) <= 4):  # NO, ABC: points and segments
            continue
        if len(w) >= 3 or lw in _SHORT_WORDS:
            words.append(w)
    return words


def nesting_depth(s: str) -> int:
    depth = best = 0
    for ch in s:
        if ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return best


def _numbers_to_latex(s: str) -> str:
    s = _THIN_THOUSANDS_RE.sub("", s)
    s = _THOUSANDS_RE.sub(lambda m: m.group(1).replace(",", ""), s)
    s = _TIMES_TEN_RE.sub(lambda m: rf"{m.group(1)}\times 10^{{{m.group(2)}}}", s)
    s = _SCI_RE.sub(lambda m: rf"{m.group(1)}\times 10^{{{m.group(2)}}}", s)
    s = re.sub(r"(?<!\\)%", r"\\%", s)
    return s


def _unwrap_delimiters(s: str) -> str:
    """Keep the math of ``$..$``/``\\(..\\)``/``\\[..\\]`` segments; a ``$`` pair
    around prose is currency, not math."""
    segments = []
    for m in _DELIM_RE.finditer(s):
        body = next(g for g in m.groups() if g is not None)
        if m.group(4) is not None and prose_words(body):
            return s.replace("\\$", "").replace("$", "")  # "$5 and $6": currency
        segments.append((m.start(), m.end(), body))
    if not segments:
        return s.replace("\\$", "").replace("$", "")
    outside = "".join(
        s[a:b]
        for a, b in zip([0] + [e for _, e, _ in segments], [st for st, _, _ in segments] + [len(s)])
    )
    if re.search(r"\d", outside) and prose_words(outside) and all(_NAME_RE.fullmatch(body) for _, _, body in segments):
        # "The largest $n$ is 34", "the domain of $f(x)$ is 19": the formulas name what the number is
        return outside.replace("\\$", "").replace("$", "")
    outside = "".join(
        s[a:b]
        for a, b in zip([0] + [e for _, e, _ in segments], [st for st, _, _ in segments] + [len(s)])
    )
    if len(segments) == 1 and not prose_words(outside):
        st, en, body = segments[0]
        return (s[:st] + " " + body + " " + s[en:]).replace("\\$", "").replace("$", "")
    # several formulas or formulas inside prose: the formulas are the answer
    pct = [re.match(r"\s*(\\?%|percent)", s[e:]) for _, e, _ in segments]
    bodies = [body + ("\\%" if p else "") for (_, _, body), p in zip(segments, pct)]
    if _NEGATION_RE.search(outside):
        return "\x00not"
    return ", ".join(b.replace("\\$", "").replace("$", "") for b in bodies)


def to_math(answer: str | None, *, gold: bool = False) -> str | None:
    """A normalized math string for the checker, or None when there is none.

    Unicode operators become LaTeX, currency signs go, thousands separators go
    (``1,234`` -> ``1234``), ``1.5e3`` becomes ``1.5\\times 10^{3}``, ``%``
    becomes ``\\%``, "and"/"or" between answers become commas (a set). Prose
    ("72 dollars", "x is 5") keeps its formulas: one -> that formula, several
    -> a set of them (so "either 72 or 73" never equals 72). A candidate with a
    negation ("not 72") gives None; a gold with several formulas in prose gives
    None (ambiguous gold).
    """
    if answer is None:
        return None
    s = answer.strip()
    if not s or len(s) > MAX_ANSWER_CHARS:
        return None
    s = normalize_unicode(s).replace("\n", " ")
    s = _TEXT_CONNECTIVE_RE.sub(lambda m: f" {m.group(1).lower()} ", s)
    if _SPACE_THOUSANDS_RE.match(s.strip()):
        s = s.replace(" ", "")
    elif _NUMBER_RUN_RE.fullmatch(s.strip()):  # "7 17" is two answers (math-verify would add them)
        s = ", ".join(s.split())
    s = _unwrap_delimiters(s)
    if s == "\x00not":
        return None
    s = _PERCENT_WORD_RE.sub("%", s)
    s = _WORD_CONST_RE.sub(
        lambda m: r"\infty" if m.group(0).lower().startswith("inf") else r"\pi", s
    )
    s = s.replace("**", " ").strip()
    s = re.sub(r"^(?:\\(?:displaystyle|quad|qquad)\s*)+", "", s)
    words = prose_words(s)
    if [w for w in words if w.lower() not in ("and", "or")]:
        if not gold and _NEGATION_RE.search(s):
            return None
        items = _prose_items(s)
        if not items or (gold and len(items) != 1):
            return None
        s = ", ".join(items)
    else:
        s = _AND_OR_RE.sub(", ", s)
    s = _numbers_to_latex(s)
    s = s.strip().rstrip(".,;:").strip()
    s = re.sub(r"\s+", " ", s)
    if not s or len(s) > MAX_ANSWER_CHARS or nesting_depth(s) > MAX_NESTING:
        return None
    return s


def _prose_items(s: str) -> list[str]:
    """Formulas in prose: runs of consecutive tokens without prose words that
    contain a digit or a LaTeX command."""
    runs: list[list[str]] = [[]]
    for tok in s.split():
        core = tok.strip(".,;:!?\"'`*")
        if core and core not in _STOP_TOKENS and not prose_words(core):
            runs[-1].append(core if tok.endswith((".", ";", ":", "!", "?")) else tok.strip("\"'`*"))
            if tok.endswith((".", ",", ";", ":", "!", "?")):
                runs.append([])
        elif runs[-1]:
            runs.append([])
    items = []
    for run in runs:
        text = _drop_unbalanced_closers(" ".join(run).strip().rstrip(".,;:").strip())
        while text.startswith(("(", "[")) and _unmatched(text, text[0]) < 0:
            text = text[1:].lstrip()
        if text and (re.search(r"\d", text) or re.search(r"\\(?:pi|infty|sqrt|frac)", text)):
            items.append(text)
    return items


# ---------------------------------------------------------------------------
# gold answers


@dataclass(frozen=True)
class Gold:
    """A gold answer prepared for checking: ``kind`` is ``math``, ``text`` or
    ``none`` (empty or ambiguous: the reward has no opinion)."""

    kind: str
    value: str | None
    raw: str


def gold_string(gold: object) -> str:
    if gold is None:
        return ""
    if isinstance(gold, bool):
        return str(gold)
    if isinstance(gold, int):
        return str(gold)
    if isinstance(gold, float):
        return repr(gold) if gold == gold and gold not in (float("inf"), float("-inf")) else ""
    if isinstance(gold, str):
        return gold
    return ""  # lists, dicts...: not an answer this reward understands


def gold_answer_text(gold: object) -> str:
    """The answer part of a gold: after ``####``, else the last box, else all."""
    s = gold_string(gold).strip()
    if len(s) > MAX_TEXT_CHARS:
        return ""
    if "####" in s:
        return hash_answer(s) or ""
    boxed = final_boxes(s)
    if boxed is not None:
        return boxed
    lower = s.lower()
    if "<answer>" in lower:
        return extract_answer(s).answer or ""
    phrase = _after_phrase(s)  # "Answer is forty two." -> "forty two", as for completions
    return phrase if phrase else s


@lru_cache(maxsize=4096)
def _prepare_gold(s: str) -> Gold:
    ans = gold_answer_text(s)
    if not ans:
        return Gold("none", None, s)
    text = text_answer(ans)
    if text is not None:
        return Gold("text", text, s)
    value = to_math(ans, gold=True)
    return Gold("math", value, s) if value else Gold("none", None, s)


def prepare_gold(gold: object) -> Gold:
    return _prepare_gold(gold_string(gold))


_TEXT_ANSWER_RE = re.compile(r"[A-Za-z][A-Za-z\s'\-.,()]{0,200}")


def text_answer(s: str) -> str | None:
    """The normalized text of a word answer ("Paris", "\\text{Yes}"), or None
    when ``s`` is mathematics."""
    t = strip_wrappers(normalize_unicode(s)).strip()
    if not t or not _TEXT_ANSWER_RE.fullmatch(t):
        return None
    words = [w for w in _WORD_RE.findall(t) if w.lower() not in MATH_WORDS]
    if not words:
        return None
    return normalize_text(t)


_WRAPPER_RE = re.compile(
    r"^\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|boxed|fbox|operatorname)\s*\{(.*)\}$",
    re.DOTALL,
)


def strip_wrappers(s: str) -> str:
    """Remove surrounding ``$``, ``\\(..\\)``, ``\\[..\\]``, ``**`` and
    ``\\text{}``-like wrappers (repeatedly)."""
    s = s.strip()
    for _ in range(10):
        before = s
        s = s.strip().strip("*").strip()
        if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
            s = s.strip("$")
        if s.startswith(("\\(", "\\[")) and s.endswith(("\\)", "\\]")):
            s = s[2:-2]
        s = s.strip()
        m = _WRAPPER_RE.match(s)
        if m and group_end(s, s.index("{")) == len(s):  # "\text{a} + \text{b}" is no wrapper
            s = m.group(1)
        if s == before:
            break
    return s.strip()


def normalize_exact(s: str | None) -> str | None:
    """``math.exact``'s normal form: wrappers stripped, case folded, runs of
    whitespace collapsed, a trailing period dropped."""
    if s is None:
        return None
    t = strip_wrappers(s.strip().rstrip(".").strip())
    t = re.sub(r"\s+", " ", t).strip().rstrip(".").strip().lower()
    return t or None


def normalize_text(s: str | None) -> str | None:
    """Text answers: ``normalize_exact`` plus leading articles and punctuation dropped."""
    t = normalize_exact(s)
    if t is None:
        return None
    t = re.sub(r"[.,;:!?\"'()]", " ", t)
    t = re.sub(r"^(?:the|a|an)\s+", "", re.sub(r"\s+", " ", t).strip())
    return t.strip() or None


# ---------------------------------------------------------------------------
# plain numbers (fast path and math.numeric)

PLAIN_NUMBER_RE = re.compile(r"[-+]?\d{1,40}(?:\.\d{1,40})?")


def plain_decimal(s: str | None) -> Decimal | None:
    """``s`` as an exact Decimal when it is a plain integer or decimal."""
    if s is None or not PLAIN_NUMBER_RE.fullmatch(s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def plain_rational(s: str | None) -> Fraction | None:
    """``s`` as an exact Fraction when it is an integer or a fraction of
    integers (``-3``, ``\\frac{6}{4}``, ``-\\dfrac{1}{2}``, ``3/4``)."""
    if s is None:
        return None
    m = _INT_FRAC_RE.fullmatch(s.strip())
    if not m:
        return None
    sign = -1 if m.group(1) else 1
    if m.group(2) is not None:
        num, den = int(m.group(2)), int(m.group(3))
    elif m.group(4) is not None:
        num, den = int(m.group(4)), int(m.group(5))
    else:
        num, den = int(m.group(6)), 1
    return None if den == 0 else sign * Fraction(num, den)


def plain_interval(s: str | None) -> tuple | None:
    """``s`` as (bracket, Decimal, Decimal, bracket) when it is an interval or
    pair of plain numbers (``[1, 2)``, ``(-\\infty, 3]``), else None."""
    if s is None:
        return None
    m = _INTERVAL_RE.fullmatch(s.strip())
    if not m:
        return None
    ends = []
    for e in (m.group(2), m.group(3)):
        e = e.replace(" ", "")
        if e.endswith("\\infty"):
            ends.append(Decimal("-Infinity") if e.startswith("-") else Decimal("Infinity"))
        else:
            ends.append(Decimal(e))
    return m.group(1), ends[0], ends[1], m.group(4)


_END = r"(?:[-+]?\s*\\infty|[-+]?\d{1,40}(?:\.\d{1,40})?)"
_INTERVAL_RE = re.compile(rf"\s*([\[(])\s*({_END})\s*,\s*({_END})\s*([\])])\s*")
_INT_FRAC_RE = re.compile(
    r"(-)?\s*(?:\\[dt]?frac\s*\{\s*(-?\d{1,40})\s*\}\s*\{\s*(-?\d{1,40})\s*\}"
    r"|(-?\d{1,40})\s*/\s*(-?\d{1,40})|(\d{1,40}))"
)
_FRAC_RE = re.compile(
    r"(-)?\\[dt]?frac\s*\{\s*(-?\d{1,40}(?:\.\d{1,40})?)\s*\}\s*\{\s*(-?\d{1,40}(?:\.\d{1,40})?)\s*\}"
)
_SLASH_RE = re.compile(r"(-?\d{1,40}(?:\.\d{1,40})?)\s*/\s*(-?\d{1,40}(?:\.\d{1,40})?)")
_SCI_LATEX_RE = re.compile(r"([-+]?\d{1,40}(?:\.\d{1,40})?)\s*\\times\s*10\^\{([-+]?\d{1,4})\}")
_UNIT_TAIL_RE = re.compile(
    r"\s*(?:\\(?:text|mathrm|mbox)\s*\{[^{}]{0,100}\}|\^\s*\{?\\circ\}?|\\%|\\,)\s*$"
)
_ASSIGN_RE = re.compile(r"^[A-Za-z](?:_\{?\w{1,10}\}?)?\s*=\s*")


# "- 5": a sign before a number, however spaced, is part of it (unary, not a subtraction)
_UNARY_SPACE_RE = re.compile(r"^([-+])\s+(?=[\d.\\])")
# arithmetic left undone: an operator between two operands, a factorial or a binomial, in a
# string of numbers and operators only. The power tower 9^{9^{9^9}} and 500000! are screened
# here in microseconds, whatever their size, where the checker would compute them for seconds
_ARITH_OP_RE = re.compile(
    r"[\d.)}]\s*(?:[-+*/^]|\\times|\\cdot|\\div)\s*[-+]?\s*[\d.({\\]|[\d)}]\s*!|\\(?:[dt]?binom|choose)(?![A-Za-z])"
)
_ARITH_ONLY_RE = re.compile(r"(?:[-+*/^().{}!\s\d]|\\(?:times|cdot|div|[dt]?frac|[dt]?binom|choose|left|right))*")
# scientific notation is a way to write a number: 10^6, 1.5 \times 10^{3}, 10^{-3}
_POWER_OF_TEN_RE = re.compile(
    r"[-+]?(?:\d{1,40}(?:\.\d{1,40})?\s*(?:\\times|\\cdot|\*)\s*)?10\s*\^\s*(?:\{\s*[-+]?\d{1,4}\s*\}|[-+]?\d{1,4})"
)


def unevaluated(cand: str | None, gold: str | None) -> bool:
    """True when ``cand`` leaves the arithmetic undone against a gold that is a plain
    number (``24``, ``-0.5``): numbers joined by operators (``18 + 6``, ``3 \\times 8``,
    ``2^{10}``, ``x = 18 + 6``), a factorial or binomial (``4!``, ``\\binom{4}{1}``) or a
    fraction that is a whole number (``\\frac{48}{2}``). The checker would find them
    equal to the gold, paying a model for restating the question. A plain number
    (``- 5`` too: a sign, however spaced), a fraction that is not whole (``\\frac{6}{8}``
    for 0.75), scientific notation (``1.5 \\times 10^{3}``, ``10^6``), and anything with a
    unit, a variable or words are not; nor is anything when the gold is an expression
    itself (``2\\sqrt{3}``, ``\\frac{3}{4}``: MATH's answers)."""
    if cand is None or gold is None or plain_decimal(gold.strip()) is None:
        return False
    s = _UNARY_SPACE_RE.sub(r"\1", _ASSIGN_RE.sub("", cand.strip()).strip())
    if plain_decimal(s) is not None or _POWER_OF_TEN_RE.fullmatch(s):
        return False
    value = plain_rational(s)
    if value is not None:
        return value.denominator == 1
    return bool(_ARITH_ONLY_RE.fullmatch(s)) and bool(_ARITH_OP_RE.search(s))


def number_value(s: str | None) -> float | None:
    """The value of a math string that is a single number: ``72``, ``-0.5``,
    ``\\frac{3}{4}``, ``3/4``, ``1.5\\times 10^{3}``, with a trailing unit,
    ``\\%`` or degree sign ignored and ``x = 5`` read as 5. Else None."""
    if s is None:
        return None
    t = s.strip()
    for _ in range(3):
        t = _UNIT_TAIL_RE.sub("", t)
    t = _ASSIGN_RE.sub("", t).strip()
    t = t.replace("{", "").replace("}", "") if PLAIN_NUMBER_RE.fullmatch(t.strip("{}")) else t
    try:
        if PLAIN_NUMBER_RE.fullmatch(t):
            return float(t)
        m = _FRAC_RE.fullmatch(t)
        if m:
            num, den = float(m.group(2)), float(m.group(3))
            return None if den == 0 else (-1 if m.group(1) else 1) * num / den
        m = _SLASH_RE.fullmatch(t)
        if m:
            num, den = float(m.group(1)), float(m.group(2))
            return None if den == 0 else num / den
        m = _SCI_LATEX_RE.fullmatch(t)
        if m and abs(int(m.group(2))) <= 300:
            return float(m.group(1)) * 10.0 ** int(m.group(2))
    except (ValueError, OverflowError):
        return None
    return None
