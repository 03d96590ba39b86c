"""The view's pages: Jinja2 templates (autoescaped: completions are the model's text, never
markup). No script runs on any page; forms are plain GET forms, so every view is a link."""

from __future__ import annotations

BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{% if refresh %}<meta http-equiv="refresh" content="{{ refresh }}">{% endif %}
<title>{{ title }} - grpo view</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:8px 16px}header a{color:#fff;text-decoration:none}
header .crumbs a{color:#c9d3ff}main{padding:12px 16px;max-width:1500px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 8px}h3{font-size:14px;margin:0 0 6px}
.problem{background:#fff1f0;border:1px solid #f5a8a0;color:#8a1c12;padding:8px 12px;margin:8px 0;border-radius:4px}
.note{background:#eef6ff;border:1px solid #9cc4f0;padding:8px 12px;margin:8px 0;border-radius:4px}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #dde1e8;padding:3px 6px;vertical-align:top}
th{background:#eef0f4;text-align:left;font-weight:600}.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:10px}.chart{background:#fff;border:1px solid #dde1e8;border-radius:4px}
.chart svg{display:block;width:460px;height:auto}
.groups{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
.group{background:#fff;border:1px solid #d4d8e0;border-radius:6px;padding:10px}
.group .prompt{white-space:pre-wrap;background:#f3f4f7;padding:6px;border-radius:4px;margin:4px 0;max-height:9em;overflow:auto}
.group table{width:100%;font-size:12.5px}.text{white-space:pre-wrap;word-break:break-word;max-width:560px}
tr.match td{background:#fff7d6}.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;margin-left:4px}
.trained{background:#d9f2de;color:#145c24}.group h3 .muted{font-weight:normal}.dropped{background:#eee;color:#666}.trunc{background:#fde2cf;color:#8a3d00}
form.filters{background:#fff;border:1px solid #dde1e8;padding:8px;border-radius:4px;display:flex;flex-wrap:wrap;gap:8px;align-items:end}
form.filters label{display:flex;flex-direction:column;font-size:12px}form.filters input[type=text]{width:9em}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:14px}
pre.config{background:#fff;border:1px solid #dde1e8;padding:8px;white-space:pre-wrap;word-break:break-word}.muted{color:#69707d}.pager a{margin-right:10px}
details summary{cursor:pointer;color:#35509a}
</style></head><body>
<header><a href="/"><b>grpo view</b></a>{% for label, href in crumbs %}<span class="crumbs"> / <a href="{{ href }}">{{ label }}</a></span>{% endfor %}</header>
<main>
{% for p in problems %}<div class="problem">{{ p }}</div>{% endfor %}
{% block body %}{% endblock %}
</main></body></html>
"""

MACROS = """
{% macro num(v, digits=3) %}{% if v is none %}-{% elif v is number %}{{ ("%." ~ digits ~ "f") | format(v) }}{% else %}{{ v }}{% endif %}{% endmacro %}

{% macro filter_form(run, q, rewards, action) %}
<form class="filters" method="get" action="{{ action }}">
<label>steps<input type="text" name="steps" value="{{ q.steps or '' }}" placeholder="12 or 10-20"></label>
<label>reward<select name="reward">{% for r in ['total'] + rewards %}<option value="{{ r }}" {% if r == q.reward %}selected{% endif %}>{{ r }}</option>{% endfor %}</select></label>
<label>from<input type="text" name="low" value="{{ '' if q.low is none else q.low }}" placeholder="min"></label>
<label>to<input type="text" name="high" value="{{ '' if q.high is none else q.high }}" placeholder="max"></label>
<label><span><input type="checkbox" name="suspect" {% if q.suspect %}checked{% endif %}> suspect</span></label>
<label><span><input type="checkbox" name="empty" {% if q.empty %}checked{% endif %}> empty</span></label>
<label>where<input type="text" name="where" value="{{ q.where[0] if q.where else '' }}" placeholder="total>=1"></label>
<label>correctness<input type="text" name="correctness" value="{{ q.correctness | join(',') }}" placeholder="(config's)"></label>
<button type="submit">Filter</button>
</form>
<p class="muted">suspect: a correctness reward scores 0 on its group's best total; empty: empty, truncated or no
answer found; where: COLUMN OP NUMBER (as <code>grpo rollouts</code>); the range reads the chosen reward.</p>
{% endmacro %}

{% macro group_card(run, g, rewards, clip=700) %}
<section class="group" id="step{{ g.step }}-round{{ g.round }}-group{{ g.group }}">
<h3><a href="/run/{{ run.index }}/step/{{ g.step }}/group/{{ g.group }}{% if g.round %}?round={{ g.round }}{% endif %}">step {{ g.step }} / group {{ g.group }}</a> <span class="muted">round {{ g.round }},</span>
{% if g.trained is true %}<span class="badge trained">trained</span>{% elif g.trained is false %}<span class="badge dropped">dropped</span>{% endif %}
<span class="muted">mean total {{ num(g.mean) }}, spread {{ num(g.spread) }}{% if g.answer is not none %}, answer {{ g.answer }}{% endif %}</span></h3>
<div class="prompt">{{ g.prompt }}</div>
<table><tr><th>#</th><th>completion</th>{% for r in rewards %}<th>{{ r }}</th>{% endfor %}<th>total</th><th>advantage</th><th>tokens</th></tr>
{% for row in g.rows %}<tr class="{{ 'match' if loop.index0 in g.matched else '' }}"><td class="num">{{ loop.index0 }}</td>
<td class="text">{% set text = row.get('completion') or '' %}{% if text | length > clip %}{{ text[:clip] }}<details><summary>{{ text | length - clip }} more characters</summary>{{ text[clip:] }}</details>{% elif not text.strip() %}<span class="muted">(empty)</span>{% else %}{{ text }}{% endif %}{% if row.get('truncated') %}<span class="badge trunc">truncated</span>{% endif %}</td>
{% for r in rewards %}<td class="num">{{ num(row.get('reward/' ~ r)) }}</td>{% endfor %}
<td class="num">{{ num(row.get('total')) }}</td><td class="num">{{ num(row.get('advantage')) }}</td><td class="num">{{ row.get('tokens', '') }}</td></tr>{% endfor %}
</table></section>
{% endmacro %}
"""

INDEX = """{% extends "base" %}{% block body %}
<h1>Runs</h1>
<table><tr><th>#</th><th>run</th><th>state</th><th>steps logged</th><th>last reward</th><th>held-out accuracy</th><th>directory</th></tr>
{% for r in rows %}<tr><td>{{ r.run.index }}</td><td><a href="/run/{{ r.run.index }}">{{ r.run.name }}</a></td>
<td>{{ r.state_text }}</td><td class="num">{{ r.steps }}</td><td class="num">{{ r.reward }}</td><td class="num">{{ r.accuracy }}</td>
<td class="muted">{{ r.run.path }}</td></tr>{% endfor %}</table>
{% if rows | length > 1 %}<h2>Compare runs</h2>
<form class="filters" method="get" action="/compare">
{% for side in ['a', 'b', 'c', 'd'] %}{% set pick = {'a': 0, 'b': 1}.get(side) %}<label>run {{ side | upper }}<select name="{{ side }}">{% if pick is none %}<option value="" selected>(none)</option>{% endif %}
{% for r in rows %}<option value="{{ r.run.index }}" {% if loop.index0 == pick %}selected{% endif %}>{{ r.run.name }}</option>{% endfor %}</select></label>
{% endfor %}<button type="submit">Compare</button></form>{% endif %}
{% endblock %}"""

RUN = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<h1>{{ run.name }}</h1>
<p class="muted">{{ run.path }} - {{ state_text }} - <a href="/run/{{ run.index }}/config">config</a></p>
{% if tokens %}<p>{{ tokens }}</p>{% endif %}
<div class="charts">{% for c in charts %}<div class="chart" id="chart-{{ c.key }}">{{ c.svg | safe }}</div>{% endfor %}</div>
{% if not charts and state.exists %}<div class="note">No logged step yet: the curves appear with the first one.</div>{% endif %}
{% if events %}<h2>Health events</h2><table><tr><th>step</th><th>check</th><th>message</th></tr>
{% for e in events %}<tr><td class="num">{{ e.get('step') }}</td><td>{{ e.get('check') }}</td><td>{{ e.get('message') }}</td></tr>{% endfor %}</table>{% endif %}
<h2>Rollouts</h2>
{% if steps %}
<p id="steps">{{ steps | length }} logged steps ({{ steps[0] }} to {{ steps[-1] }}){% if shown_steps | length < steps | length %}; steps {{ shown_steps[0] }} to {{ shown_steps[-1] }} linked here{% endif %}. Step:
{% for s in shown_steps %}<a href="/run/{{ run.index }}/step/{{ s }}">{{ s }}</a> {% endfor %}</p>
{% if pager.earlier is not none or pager.later is not none %}<p class="pager">{% if pager.earlier is not none %}<a href="/run/{{ run.index }}?from={{ pager.earlier }}#steps">earlier steps</a>{% endif %}
{% if pager.later is not none %}<a href="/run/{{ run.index }}?from={{ pager.later }}#steps">later steps</a>{% endif %}</p>{% endif %}
{{ m.filter_form(run, q, rewards, "/run/" ~ run.index ~ "/rollouts") }}
<h2>Compare two steps</h2>
<form class="filters" method="get" action="/compare">
<input type="hidden" name="a_run" value="{{ run.index }}"><input type="hidden" name="b_run" value="{{ run.index }}">
<label>step A<input type="text" name="a_step" value="{{ steps[0] }}"></label>
<label>step B<input type="text" name="b_step" value="{{ steps[-1] }}"></label>
<button type="submit">Compare</button></form>
{% elif state.exists %}<div class="note">No rollout log yet.</div>{% endif %}
{% endblock %}"""

CONFIG = """{% extends "base" %}{% block body %}
<h1>{{ run.name }}: config</h1>
<p class="muted">{{ run.path }}/config.yaml, as grpo train wrote it (the settings the run trained with)</p>
{% if config and config.text is not none %}<pre class="config">{{ config.text }}</pre>{% endif %}
{% endblock %}"""

ROLLOUTS = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<h1>{{ run.name }}: rollouts</h1>
{{ m.filter_form(run, q, rewards, "/run/" ~ run.index ~ "/rollouts") }}
<p id="summary">{{ summary }}</p>
{% if pages > 1 %}<p class="pager">{% if q.page > 1 %}<a href="?{{ q.params(page=q.page - 1) }}">previous</a>{% endif %}
page {{ q.page }} of {{ pages }}{% if q.page < pages %} <a href="?{{ q.params(page=q.page + 1) }}">next</a>{% endif %}</p>{% endif %}
<div class="groups">{% for g in groups %}{{ m.group_card(run, g, rewards) }}{% endfor %}</div>
{% endblock %}"""

STEP = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<h1>{{ run.name }}: step {{ step }}</h1>
<p class="pager">{% if prev %}<a href="/run/{{ run.index }}/step/{{ prev }}">step {{ prev }}</a>{% endif %}
{% if next %}<a href="/run/{{ run.index }}/step/{{ next }}">step {{ next }}</a>{% endif %}
<a href="/run/{{ run.index }}/rollouts?steps={{ step }}">filter this step</a></p>
<table>{% for label, value in stats %}<tr><th>{{ label }}</th><td class="num">{{ value }}</td></tr>{% endfor %}</table>
<h2>Groups</h2>
<div class="groups">{% for g in groups %}{{ m.group_card(run, g, rewards) }}{% endfor %}</div>
{% endblock %}"""

GROUP = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<h1>{{ run.name }}: step {{ g.step }}, group {{ g.group }}{% if g.round %}, round {{ g.round }}{% endif %}</h1>
<p class="pager"><a href="/run/{{ run.index }}/step/{{ g.step }}#step{{ g.step }}-round{{ g.round }}-group{{ g.group }}">the whole step</a></p>
{{ m.group_card(run, g, rewards, clip=100000) }}
{% if extras %}<h2>What the rewards logged</h2><table><tr><th>#</th>{% for k in extras %}<th>{{ k }}</th>{% endfor %}</tr>
{% for row in g.rows %}<tr><td class="num">{{ loop.index0 }}</td>{% for k in extras %}<td class="text">{{ row.get(k) }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
{% endblock %}"""

COMPARE = """{% extends "base" %}{% import "macros" as m %}{% block body %}
<h1>Compare</h1>
{% if figures %}<form class="filters" method="get" action="/compare">
{% for k, v in here %}<input type="hidden" name="{{ k }}" value="{{ v }}">{% endfor %}
<label>a figure of the runs<select name="figure"><option value="">(the main curves)</option>
{% for f in figures %}<option value="{{ f }}" {% if f == figure %}selected{% endif %}>{{ f }}</option>{% endfor %}</select></label>
<button type="submit">Draw</button></form>{% endif %}
{% if charts %}<div class="charts">{% for c in charts %}<div class="chart" id="chart-{{ c.key }}">{{ c.svg | safe }}</div>{% endfor %}</div>{% endif %}
{% if differ or same %}<h2>Settings that differ</h2>
{% if differ %}<table id="settings"><tr><th>setting (config.yaml)</th>{% for r in runs %}<th>{{ r.name }}</th>{% endfor %}</tr>
{% for key, values in differ %}<tr><td>{{ key }}</td>{% for v in values %}<td class="text">{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
<p class="muted">{{ differ | length }} setting{{ '' if differ | length == 1 else 's' }} differ{{ 's' if differ | length == 1 else '' }}; {{ same }} {{ 'is' if same == 1 else 'are' }} the same in every run.</p>{% endif %}
<div class="cols">{% for side in sides %}<div class="side" id="side-{{ loop.index0 }}">
<h2><a href="/run/{{ side.run.index }}">{{ side.run.name }}</a>{% if side.step is not none %}, <a href="/run/{{ side.run.index }}/step/{{ side.step }}">step {{ side.step }}</a>{% endif %}</h2>
<table>{% for label, value in side.stats %}<tr><th>{{ label }}</th><td class="num">{{ value }}</td></tr>{% endfor %}</table>
{% if side.groups %}<h3 style="margin-top:10px">groups ({{ side.groups | length }}{% if side.more %} of {{ side.more }}{% endif %})</h3>
{% for g in side.groups %}{{ m.group_card(side.run, g, side.rewards, clip=400) }}{% endfor %}{% endif %}
</div>{% endfor %}</div>
{% endblock %}"""

TEMPLATES = {"base": BASE, "macros": MACROS, "index": INDEX, "run": RUN, "config": CONFIG, "rollouts": ROLLOUTS,
             "step": STEP, "group": GROUP, "compare": COMPARE}

__all__ = ["TEMPLATES"]
