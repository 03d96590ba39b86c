"""The judge rewards: ``judge.score``, ``judge.yesno``, ``judge.rubric`` and the group reward
``judge.pairwise``, each a TRL reward function scoring 0..1 through a judge model's answers
(:mod:`.ask`), None where the judge's answer cannot be read or never came (counted)."""

from __future__ import annotations

from grpo_core import completion_text

from . import parse, templates
from .ask import NO_ANSWER, Ledger, ask, report
from .client import Reply
from .settings import Settings, parameter_doc, signature
from .settings import values as param_values

MAX_ITEMS = 50  # rubric items


def _prompt_text(prompt) -> str:
    """The question the policy answered: the last user message (or the prompt text)."""
    if isinstance(prompt, (list, tuple)):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return completion_text(users[-1:] or list(prompt)[-1:])
    return completion_text(prompt)


def _reference(kwargs: dict, column: str, n: int) -> list[str]:
    """The reference column's values ("" where there is none); a column named other than the
    default that the data lacks is an error naming it."""
    if not column:
        return [""] * n
    values = kwargs.get(column)
    if not isinstance(values, (list, tuple)) or len(values) != n:
        if column != "answer" and n:
            present = sorted(k for k, v in kwargs.items() if isinstance(v, (list, tuple)) and len(v) == n
                             and k not in ("prompts", "completion_ids"))
            raise ValueError(f"reference={column!r} names no dataset column; the columns are "
                             f"{', '.join(present) or 'none'} (reference='' shows the judge none)")
        return [""] * n
    return ["" if v is None else str(v) for v in values]


def _fields(s: Settings, completions, prompts, kwargs: dict) -> list[dict[str, str]]:
    n = len(completions)
    prompts = list(prompts) if prompts is not None else [None] * n
    refs = _reference(kwargs, s.reference, n)
    return [{"prompt": templates.clean(_prompt_text(p), s.max_chars),
             "completion": templates.clean(completion_text(c), s.max_chars),
             "reference": templates.clean(r, s.max_chars) if r else ""}
            for c, p, r in zip(completions, prompts if len(prompts) == n else [None] * n, refs)]


def _one_each(name: str, kind: str, own: dict, completions, prompts, kwargs: dict, params: dict, read,
              soft) -> list:
    """A reward that asks one question per completion."""
    s = Settings.of(params, kind)
    if not completions:
        return []
    rows = _fields(s, completions, prompts, kwargs)
    ledger = Ledger()
    values = ask(s, [templates.render(s.template, {**row, **own}) for row in rows], read, soft, ledger)
    out = []
    for v in values:
        ledger.failed += v is NO_ANSWER
        ledger.unparsed += v is None
        out.append(None if v is None or v is NO_ANSWER else float(v))
    report(name, s, ledger, kwargs, len(out))
    return out


def _yes(reply: Reply) -> float | None:
    return reply.p if reply.p is not None else parse.yes_no(reply.answer)


def _a(reply: Reply) -> float | None:
    return reply.p if reply.p is not None else parse.a_or_b(reply.answer)


# ---------------------------------------------------------------- judge.score

SCORE_OWN = (("rubric", str, "", "what the judge grades against (required)"),
             ("scale", int, 10, "the judge scores 0..scale; the reward is score / scale"))


def score(completions, prompts=None, **kwargs):
    params = param_values(kwargs, SCORE_OWN)
    rubric, scale = params["rubric"], params["scale"]
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("judge.score needs rubric='what a good response does', e.g. "
                         "judge.score(rubric='Is the summary faithful and complete?')")
    if not 1 <= scale <= 1000:
        raise ValueError(f"scale must be from 1 to 1000, got {scale!r}")
    return _one_each("judge.score", "score", {"rubric": rubric, "scale": str(scale)}, completions, prompts, kwargs,
                     params, lambda reply: parse.score(reply.answer, scale), None)


# ---------------------------------------------------------------- judge.yesno

YESNO_OWN = (("question", str, "Does the response answer the question correctly?",
              "the yes/no question the judge answers about each response"),)


def yesno(completions, prompts=None, **kwargs):
    params = param_values(kwargs, YESNO_OWN)
    question = params["question"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError("judge.yesno needs question='a yes/no question about the response'")
    return _one_each("judge.yesno", "yesno", {"question": question}, completions, prompts, kwargs, params, _yes,
                     ("yes", "no"))


# ---------------------------------------------------------------- judge.rubric

RUBRIC_OWN: tuple[tuple[str, type, list, str], ...] = (("items", list, [], "the checklist: each item judged yes/no on its own (required)"),)


def rubric(completions, prompts=None, **kwargs):
    params = param_values(kwargs, RUBRIC_OWN)
    items = params["items"]
    if (not isinstance(items, (list, tuple)) or not items or len(items) > MAX_ITEMS
            or not all(isinstance(i, str) and i.strip() for i in items)):
        raise ValueError(f"judge.rubric needs items=[...]: 1 to {MAX_ITEMS} non-empty texts, e.g. "
                         f"items=['cites the source', 'under 100 words'], got {items!r:.100}")
    s = Settings.of(params, "item")
    if not completions:
        return []
    rows = _fields(s, completions, prompts, kwargs)
    users = [templates.render(s.template, {**row, "item": item}) for row in rows for item in items]
    ledger = Ledger()
    values = ask(s, users, _yes, ("yes", "no"), ledger)
    out, k = [], len(items)
    for i in range(len(rows)):
        mine = values[i * k:(i + 1) * k]
        if any(v is NO_ANSWER for v in mine):
            ledger.failed += 1
            out.append(None)
        elif any(v is None for v in mine):
            ledger.unparsed += 1
            out.append(None)
        else:
            out.append(sum(mine) / k)
    report("judge.rubric", s, ledger, kwargs, len(out))
    return out


# ---------------------------------------------------------------- judge.pairwise

PAIRWISE_OWN = (("criterion", str, "Which response answers the question better?",
                 "what the judge compares two responses on"),
                ("opponents", int, 3, "each completion is compared with this many others of its group, "
                                      "in both orders"))


def pairs(size: int, opponents: int) -> list[tuple[int, int]]:
    """The ordered comparisons of a group of ``size``: each completion against its next
    ``opponents`` (circularly), each pair asked in both orders (a judge's bias for the
    first position cancels)."""
    chosen = {tuple(sorted((i, (i + d) % size))) for i in range(size) for d in range(1, min(opponents, size - 1) + 1)}
    return [p for a, b in sorted(chosen) for p in ((a, b), (b, a))]


def pairwise(completions, prompts=None, **kwargs):
    params = param_values(kwargs, PAIRWISE_OWN)
    criterion, opponents = params["criterion"], params["opponents"]
    if not isinstance(criterion, str) or not criterion.strip():
        raise ValueError("judge.pairwise needs criterion='what makes one response better than another'")
    if not 1 <= opponents <= 64:
        raise ValueError(f"opponents must be from 1 to 64, got {opponents!r}")
    s = Settings.of(params, "pairwise")
    if not completions:
        return []
    rows = _fields(s, completions, prompts, kwargs)
    if len(rows) == 1:  # nothing to compare it with
        return [None]
    asked = pairs(len(rows), opponents)
    users = [templates.render(s.template, {"prompt": rows[a]["prompt"], "reference": rows[a]["reference"],
                                           "first": rows[a]["completion"], "second": rows[b]["completion"],
                                           "criterion": criterion}) for a, b in asked]
    ledger = Ledger()
    values = ask(s, users, _a, ("a", "b"), ledger)
    won: list[list[float]] = [[] for _ in rows]
    lost_answer = [False] * len(rows)
    unread = [False] * len(rows)
    for (a, b), v in zip(asked, values):
        if v is NO_ANSWER or v is None:
            for i in (a, b):
                (lost_answer if v is NO_ANSWER else unread)[i] = True
            continue
        won[a].append(v)
        won[b].append(1.0 - v)
    out = []
    for i, mine in enumerate(won):
        if mine:
            out.append(sum(mine) / len(mine))
        else:
            out.append(None)
            ledger.failed += lost_answer[i] and not unread[i]
            ledger.unparsed += unread[i]
    report("judge.pairwise", s, ledger, kwargs, len(out))
    return out


def _declare(func, own, doc: str) -> None:
    func.__signature__, func.__annotations__ = signature(own)
    func.__doc__ = f"{doc}\n\nParameters:\n{parameter_doc(own)}"


_declare(score, SCORE_OWN, "The judge's score against a rubric, 0..scale, normalised to 0..1 (None when its answer "
                           "has no score in range).")
_declare(yesno, YESNO_OWN, "The judge's yes to a question about the response: P(yes) from its log-probabilities where "
                           "the server gives them, else 1 for yes, 0 for no (None for anything else).")
_declare(rubric, RUBRIC_OWN, "A checklist: the share of items the judge says the response meets, each item asked on "
                             "its own (None when an item's answer cannot be read).")
_declare(pairwise, PAIRWISE_OWN, "A group reward: the completions of one prompt compared in pairs (both orders); each "
                                 "scores its share of comparisons won, P(win) from log-probabilities where given.")

REWARDS = {"judge.score": score, "judge.yesno": yesno, "judge.rubric": rubric, "judge.pairwise": pairwise}

__all__ = ["REWARDS", "score", "yesno", "rubric", "pairwise", "pairs"]
