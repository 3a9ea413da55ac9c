"""The workshop's pages: HTML, CSS and the vanilla JavaScript that polls the room (no build step).

The facilitator's pages (projector, replay) carry the facilitator's key in their script (``KEY``) and send it
with every request (header ``X-Parley-Key``); a participant's page has none (``KEY`` is null).
"""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["page"]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 12px 24px; display: flex; gap: 24px; align-items: baseline; }
header h1 { font-size: 22px; margin: 0; } header .sub { opacity: .8; }
main { padding: 16px 24px; display: grid; gap: 16px; }
.two { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
section { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px #0002; }
h2 { font-size: 16px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .04em; color: #556; }
.big { display: flex; gap: 32px; } .big div { font-size: 14px; color: #556; }
.big b { display: block; font-size: 40px; color: #1d2330; white-space: nowrap; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
td, th { padding: 4px 8px; border-bottom: 1px solid #e3e6ea; text-align: left; }
form.inline { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: end; }
label { display: flex; flex-direction: column; font-size: 13px; color: #556; gap: 2px; }
button { background: #2456d6; color: #fff; border: 0; border-radius: 6px; padding: 8px 16px; font-size: 15px;
  cursor: pointer; } button:disabled { background: #99a; }
.refusal { color: #b3261e; } .ok { color: #17803d; } .muted { color: #778; font-size: 13px; }
.bar { height: 14px; background: #e3e6ea; border-radius: 7px; position: relative; margin: 6px 0 2px; }
.bar .fill { height: 100%; background: #2456d6; border-radius: 7px; }
.bar .mark { position: absolute; top: -4px; width: 3px; height: 22px; background: #b3261e; }
.seq { display: grid; grid-template-columns: 5em 1fr 1fr 1fr; font-size: 13px; row-gap: 2px; }
.seq .lane { font-weight: 600; text-align: center; border-bottom: 2px solid #1d2330; padding-bottom: 4px; }
.seq .who { color: #556; } .seq .arrow { position: relative; padding: 1px 8px;
  border-bottom: 2px solid #2456d6; } .seq .arrow.back { border-color: #17803d; text-align: right; }
.seq .arrow.refused { border-color: #b3261e; color: #b3261e; }
.seq .obs { text-align: center; color: #556; } .seq .says { color: #778; font-size: 12px; }
.wire td { vertical-align: top; } .wire .payload { font-family: ui-monospace, monospace; font-size: 12px;
  overflow-wrap: anywhere; }
.pinned span { display: inline-block; margin: 2px; padding: 2px 8px; border-radius: 10px; background: #e7edfb; }
.step { font-size: 18px; } .learned { color: #17803d; }
"""

#: Shared helpers of every page's script (after ``const KEY = ...;``).
COMMON_JS = """
function $(id) { return document.getElementById(id); }
function headers(extra) { const h = Object.assign({'Accept': 'application/json'}, extra || {});
  if (KEY) { h['X-Parley-Key'] = KEY; } return h; }
async function get(url) {
  const r = await fetch(url, {headers: headers()});
  const out = await r.json(); if (!r.ok) { throw new Error(out.error || r.statusText); } return out; }
function esc(s) { return String(s).replace(/[&<>"]/g, function (c) {
  return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]; }); }
function pct(x) { return x === null || x === undefined ? '–' : x.toFixed(1) + ' %'; }
async function post(url, data) {
  const r = await fetch(url, {method: 'POST', headers: headers({'Content-Type': 'application/json'}),
    body: JSON.stringify(data)});
  const out = await r.json(); if (!r.ok) { throw new Error(out.error || r.statusText); } return out; }
function sequence(el, rows, parties, lanes) {
  // one lane per party (the observer last), an arrow per message from its sender's lane to its recipient's
  const n = parties.length, at = {}; parties.forEach(function (p, i) { at[p] = i; });
  el.style.gridTemplateColumns = '5em repeat(' + n + ', minmax(0, 1fr))';
  let out = '<div class="lane" style="grid-column:1">#</div>';
  parties.forEach(function (p) { const l = (lanes || {})[p] || [p, ''];
    out += '<div class="lane">' + esc(l[0]) + (l[1] ? '<br><span class="muted">(' + esc(l[1]) + ')</span>' : '') +
      '</div>'; });
  rows.forEach(function (m) {
    const s = at[m.sender] || 0, r = at[m.recipient] || 0, back = s > r;
    const cls = 'arrow' + (back ? ' back' : '') + (m.kind === 'refusal' ? ' refused' : '');
    out += '<div class="who" style="grid-column:1">' + esc(m.who || '') + ' #' + m.n + '</div>' +
      '<div class="' + cls + '" style="grid-column:' + (Math.min(s, r) + 2) + ' / ' + (Math.max(s, r) + 3) + '">' +
      (back ? '◀ ' : '') + esc(m.sender) + ' → ' + esc(m.recipient) + ': <b>' + esc(m.kind) + '</b>' +
      (back ? '' : ' ▶') + '</div><div class="obs" style="grid-column:' + (n + 1) + '">' +
      (m.sealed ? 'sees its size only' : 'reads it') + '</div>' +
      '<div class="says" style="grid-column:2 / ' + (n + 2) + '">' + esc(m.says) + '</div>';
  });
  el.innerHTML = out;
}
"""

HOME = """<section><h2>parley workshop</h2><p>Each participant opens <a href="/play">/play</a> on a laptop.
The facilitator opens the projector page (and, for a room without laptops, the replay page) at the address
<code>parley workshop</code> printed: it carries the facilitator's key.</p></section>"""

PROJECTOR = """
<section><h2>Facilitator</h2><form class="inline" id="defense" onsubmit="return false">
<label>card<select id="card">{cards}</select></label>
<label>protocol<select id="protocol"></select></label>
<label id="knob-epsilon"><span>ε per <span id="per">query</span></span><input id="epsilon" size="5" value="0.5"></label>
<label id="knob-decimals">decimals<input id="decimals" size="4" placeholder="all"></label>
<label id="knob-budget">budget (total ε)<input id="budget" size="5" placeholder="none"></label>
<label id="knob-confidential"><span><input type="checkbox" id="confidential"> confidential channel</span></label>
<button id="start" type="button">Start round</button>
<button id="reveal" type="button">Reveal the scores</button> <span id="config-error" class="refusal"></span>
</form><p class="muted">Participants join at <b id="join-url"></b> · <a id="replay-link" href="/replay">replay
mode</a> · <span id="round-status"></span></p></section>
<section><h2 id="card-title"></h2><p id="blurb"></p><p>Defense: <b id="defense-line"></b>
(round <span id="round"></span>) · the participants play <b id="role"></b></p></section>
<section><h2>The room's progress</h2><div class="big">
<div><b id="pinned">0</b>of <span id="roster"></span> people guessed</div>
<div><b id="leakage">hidden</b><span id="leakage-label"></span></div>
<div><b id="bound">–</b>bound of the ε spent</div>
<div><b id="spent">0</b>ε spent by the room (every world answers about the same A)</div></div>
<div class="bar"><div class="fill" id="leak-bar" style="width:0"></div><div class="mark" id="bound-mark"></div></div>
<p class="muted">Blue: the room's leakage, scored by the referee against the true A no party handed over, shown
when the facilitator ends the round (a score moving after each guess would tell its guesser whether they were
right); red mark: the bound (e^ε + δ)/(1 + e^ε) of the budget spent (100 % under raw and mpc, which promise nothing).
<span id="chance"></span></p></section>
<main class="two" style="padding:0">
<section><h2>Participants</h2><table><thead><tr><th>who</th><th id="moves">queries</th><th>guessed</th><th>right</th>
<th>leakage</th><th>ε spent</th><th>bound</th><th>refusals</th></tr></thead><tbody id="participants"></tbody>
</table></section>
<section><h2>Message sequence (newest last)</h2><div class="seq" id="sequence"></div></section></main>
<script>
const CARDS = {cards_json};
const KNOBS = ['epsilon', 'decimals', 'budget', 'confidential'];
let synced = false;
$('join-url').textContent = location.origin + '/play';
$('replay-link').href = '/replay?key=' + encodeURIComponent(KEY);
function pickCard(name) {
  // the card's own defense: its protocols, only the knobs that apply, its defaults
  const c = CARDS[name];
  $('protocol').innerHTML = c.protocols.map(function (p) {
    return '<option value="' + esc(p) + '">' + esc(p) + '</option>'; }).join('');
  KNOBS.forEach(function (k) { $('knob-' + k).style.display = c.knobs.indexOf(k) >= 0 ? '' : 'none'; });
  Object.keys(c.defaults).forEach(function (k) { $(k).value = c.defaults[k]; });
  $('per').textContent = c.per;
}
function knob(k) { return CARDS[$('card').value].knobs.indexOf(k) >= 0; }
$('card').onchange = function () { pickCard($('card').value); };
pickCard($('card').value);
$('start').onclick = async function () {
  $('config-error').textContent = ''; $('start').disabled = true;
  try { await post('/api/configure', {card: $('card').value, protocol: $('protocol').value,
    epsilon: knob('epsilon') ? $('epsilon').value : '', decimals: knob('decimals') ? $('decimals').value : '',
    budget: knob('budget') ? $('budget').value : '',
    confidential: knob('confidential') && $('confidential').checked}); await refresh(); }
  catch (e) { $('config-error').textContent = e.message; }
  $('start').disabled = false; };
$('reveal').onclick = async function () {
  $('config-error').textContent = ''; $('reveal').disabled = true;
  try { await post('/api/reveal', {}); await refresh(); }
  catch (e) { $('config-error').textContent = e.message; $('reveal').disabled = false; } };
function hidden(s, x) { return s.revealed ? pct(x) : 'hidden'; }
async function refresh() {
  let s;
  try { s = await get('/api/state'); } catch (e) { $('config-error').textContent = e.message; return; }
  if (!synced) {  // the form shows the round the room plays (a reloaded page included)
    synced = true; $('card').value = s.card; pickCard(s.card); $('protocol').value = s.settings.protocol;
    ['epsilon', 'decimals', 'budget'].forEach(function (k) {
      if (s.settings[k] !== null && s.settings[k] !== undefined) { $(k).value = s.settings[k]; } });
    $('confidential').checked = !!s.settings.confidential;
  }
  $('card-title').textContent = s.card_title; $('blurb').textContent = s.blurb; $('role').textContent = s.role;
  $('moves').textContent = s.moves;
  $('defense-line').textContent = s.defense; $('round').textContent = s.round;
  $('pinned').textContent = s.pinned; $('roster').textContent = s.roster;
  $('leakage').textContent = hidden(s, s.leakage); $('bound').textContent = pct(s.bound);
  $('leakage-label').textContent = s.revealed ? 'leakage (balanced accuracy of the guesses; 50 % is a coin): ' +
    s.rightly + ' of ' + s.guesses + ' guesses right' : 'leakage: the referee keeps it until the round ends';
  $('reveal').disabled = s.revealed;
  $('round-status').textContent = s.revealed ? 'round ' + s.round + ' is over: scores revealed, queries closed; ' +
    'start a new round to play again' : 'round ' + s.round + ' is live: scores hidden until you reveal them';
  $('spent').textContent = s.epsilon_spent.toFixed(2);
  $('chance').textContent = s.guesses ? 'A coin over these ' + s.guesses + ' guesses lands within 50 ± ' +
    s.chance.toFixed(0) + ' % nineteen times in twenty.' : '';
  $('leak-bar').style.width = (s.revealed && s.leakage || 0) + '%'; $('bound-mark').style.left = s.bound + '%';
  $('participants').innerHTML = s.participants.map(function (p) {
    return '<tr><td>' + esc(p.name) + '</td><td>' + p.queries + '</td><td>' + p.pinned + '</td><td>' +
      (s.revealed ? p.rightly : 'hidden') + '</td><td>' + hidden(s, p.leakage) + '</td><td>' +
      p.epsilon_spent.toFixed(2) + '</td><td>' + pct(p.bound) + '</td><td>' + p.refusals + '</td></tr>'; }).join('');
  sequence($('sequence'), s.sequence, s.parties, s.lanes);
  document.body.dataset.round = s.round; document.body.dataset.revealed = s.revealed ? '1' : '0';
  document.body.dataset.ready = '1';
}
refresh(); setInterval(refresh, 1000);
</script>
"""

JOIN = """<section><h2>Join the room</h2><form method="post" action="/api/join" class="inline">
<label>your name<input name="name" id="name" autofocus></label><button id="join" type="submit">Join</button>
</form><p class="muted">You will play the adversary of the facilitator's card (the curious data center, the
passive observer, ...) against real parties.</p></section>"""

PLAY = """
<section><h2 id="card"></h2><p id="blurb"></p><p>Defense: <b id="defense"></b> · round <span id="round"></span>
· ε spent <b id="spent">0</b> · refusals <span id="refusals">0</span></p></section>
<main class="two" style="padding:0">
<section><h2>Your move</h2><form class="inline" onsubmit="return false">
<label><span id="person-label">person</span><select id="person"></select></label>
<label><span id="choice-label">choice</span><select id="choice"></select></label>
<button id="send" type="button">Send</button></form><p id="over" class="refusal"></p>
<p class="muted" id="help"></p>
<h2>Last answer</h2><div id="answer" class="muted">nothing sent yet</div></section>
<section><h2 id="pinned-label">What you have pinned down</h2><div class="pinned" id="pinned"></div>
<h2 style="margin-top:12px">Your moves</h2><table><thead><tr id="columns"></tr></thead><tbody id="log"></tbody>
</table></section></main>
<section id="wire-panel" style="display:none"><h2>The wire: every envelope of your world, as it passes</h2>
<table class="wire"><thead><tr><th>#</th><th>sender → recipient</th><th>kind</th><th>size</th><th>what you read</th>
</tr></thead><tbody id="wire"></tbody></table></section>
<script>
const PID = {pid};
let round = null, groups = {}, busy = false;
function group(g) {
  return g === null || g === undefined ? 'undecided' : 'A = ' + g + (groups[g] ? ' (' + groups[g] + ')' : ''); }
function show(e) {
  if (!e) { return; }
  $('answer').className = e.kind === 'refusal' || e.kind === 'sealed' ? 'refusal' : 'ok';
  $('answer').innerHTML = e.kind === 'refusal' && !e.reading ?
    'Refused by the compliance party (signed, verified): <b>' + esc(e.reason) + '</b> ' + esc(e.detail) :
    esc(e.headline || '') + '<br>' + esc(e.reading) + ' → person ' + e.person + ': <b>' + group(e.guess) + '</b>';
}
async function refresh() {
  const s = await (await fetch('/api/participants/' + PID, {headers: headers()})).json();
  if (s.error) { location.href = '/play'; return; }
  groups = s.groups;
  if (round !== s.round) {  // a new round may be another card: its people, choices and words
    round = s.round; $('answer').className = 'muted'; $('answer').textContent = 'nothing sent yet';
    $('person').innerHTML = s.people.map(function (p) {
      return '<option value="' + p + '">person ' + p + '</option>'; }).join('');
    $('choice').innerHTML = s.choice_order.map(function (k) {
      return '<option value="' + esc(k) + '">' + esc(s.choices[k]) + '</option>'; }).join('');
    $('person-label').textContent = s.labels.person; $('choice-label').textContent = s.labels.choice;
    $('send').textContent = s.labels.send; $('help').textContent = s.labels.help;
    $('pinned-label').textContent = s.labels.pinned;
    $('columns').innerHTML = ['#', 'person'].concat(s.columns, ['guess']).map(function (c) {
      return '<th>' + esc(c) + '</th>'; }).join('');
    document.body.dataset.card = s.card_name;
  }
  $('card').textContent = s.card; $('blurb').textContent = s.blurb; $('defense').textContent = s.defense;
  $('round').textContent = s.round; $('spent').textContent = s.epsilon_spent.toFixed(2);
  $('refusals').textContent = s.refusals; $('send').disabled = busy || s.revealed;
  $('over').textContent = s.revealed ? 'Round ' + s.round + ' is over: the facilitator revealed the scores ' +
    'on the projector. Wait for the next round.' : '';
  $('pinned').innerHTML = Object.keys(s.pinned).length ? Object.keys(s.pinned).map(function (p) {
    return '<span>person ' + p + ': ' + group(s.pinned[p]) + '</span>'; }).join('') :
    '<span class="muted">no one yet</span>';
  $('log').innerHTML = s.log.map(function (e) {
    return '<tr class="' + (e.kind === 'refusal' ? 'refusal' : '') + '"><td>' + (e.message || '') + '</td><td>' +
      e.person + '</td>' + e.cells.map(function (c) { return '<td>' + esc(c) + '</td>'; }).join('') + '<td>' +
      (e.kind === 'refusal' && e.guess === null ? '' : group(e.guess)) + '</td></tr>'; }).join('');
  $('wire-panel').style.display = s.wire ? '' : 'none';
  $('wire').innerHTML = (s.wire || []).map(function (m) {
    return '<tr><td>' + m.n + '</td><td>' + esc(m.sender) + ' → ' + esc(m.recipient) + '</td><td>' + esc(m.kind) +
      '</td><td>' + m.size.toLocaleString('en') + ' bytes</td><td>' + esc(m.says) + '<div class="payload">' +
      esc(m.payload) + '</div></td></tr>'; }).join('');
  document.body.dataset.round = s.round; document.body.dataset.sent = s.log.length; document.body.dataset.ready = '1';
}
$('send').onclick = async function () {
  busy = true; $('send').disabled = true;
  try { show(await post('/api/participants/' + PID + '/ask', {person: $('person').value, choice: $('choice').value}));
  } catch (e) { $('answer').className = 'refusal'; $('answer').textContent = e.message; }
  busy = false; await refresh(); };
refresh(); setInterval(refresh, 1000);
</script>
"""

REPLAY = """
<section><h2>Replay: a finished run, one message at a time</h2>
<p>For a room without laptops: the card's catalog scenario, its attack in the participants' place, runs under
the facilitator's defense; step through its verified transcript.</p>
<button id="run" type="button">Run the card's scenario</button> <button id="prev" type="button">◀ Back</button>
<button id="next" type="button">Next message ▶</button> <button id="end" type="button">To the end ▶▶</button>
<span id="status" class="muted"></span></section>
<section><h2 id="title">No run yet</h2><p class="step" id="current"></p><div id="learned" class="learned"></div>
<div class="big"><div><b id="pinned">0</b>people pinned down</div><div><b id="at">0</b>of <span id="total">0</span>
messages</div><div><b id="leakage">–</b>leakage at the end</div><div><b id="bound">–</b>bound</div></div></section>
<section><h2>Message sequence</h2><div class="seq" id="sequence"></div></section>
<script>
let data = null, at = 0;
function draw() {
  if (!data || data.status !== 'ready') { return; }
  const steps = data.steps.slice(0, at);
  $('title').textContent = data.scenario + ' under ' + data.defense;
  $('total').textContent = data.steps.length; $('at').textContent = at;
  const last = steps[steps.length - 1];
  $('current').textContent = last ? '#' + last.n + ' ' + last.sender + ' → ' + last.recipient + ': ' + last.says : '';
  $('learned').innerHTML = last ? last.learned.map(function (l) {
    return '<p>learned: ' + esc(l) + '</p>'; }).join('') : '';
  $('pinned').textContent = last ? last.pinned : 0;
  const done = at === data.steps.length;
  $('leakage').textContent = done ? pct(data.leakage) : '…'; $('bound').textContent = pct(data.bound);
  sequence($('sequence'), steps.slice(-12), data.parties || ['data-center', 'compliance', 'observer'], null);
  document.body.dataset.at = at;
}
$('run').onclick = async function () {
  $('status').textContent = 'running…'; $('run').disabled = true;
  data = await post('/api/replay', {}); at = 0;
  $('status').textContent = data.status === 'ready' ? data.messages + ' messages' : (data.stopped || data.status);
  if (data.stopped) { $('title').textContent = 'The attack stopped: ' + data.stopped; }
  $('run').disabled = false; draw(); document.body.dataset.replay = data.status; };
$('next').onclick = function () { if (data && at < data.steps.length) { at += 1; draw(); } };
$('prev').onclick = function () { if (at > 0) { at -= 1; draw(); } };
$('end').onclick = function () { if (data) { at = data.steps.length; draw(); } };
get('/api/replay').then(function (d) { if (d.status === 'ready') { data = d; draw(); } },
  function (e) { $('status').textContent = e.message; }).then(function () { document.body.dataset.ready = '1'; });
</script>
"""

TITLES = {"home": "parley workshop", "projector": "projector", "join": "join", "play": "participant",
          "replay": "replay"}


def _options(values: Any) -> str:
    items = values.items() if isinstance(values, dict) else ((v, v) for v in values)
    return "".join(f'<option value="{html.escape(str(k))}">{html.escape(str(label))}</option>' for k, label in items)


def _script_value(value: Any) -> str:
    """``value`` as a JavaScript literal safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page(name: str, context: dict[str, Any]) -> str:
    """The HTML of page ``name`` (home, projector, join, play, replay) filled from ``context``.

    ``context["key"]``, on the facilitator's pages (projector, replay), is the key their script sends.
    """
    if name == "projector":
        cards = context["cards"]
        body = PROJECTOR.replace("{cards}", _options({k: c["title"] for k, c in cards.items()})).replace(
            "{cards_json}", _script_value(cards))
    elif name == "play":
        body = PLAY.replace("{pid}", _script_value(context["pid"]))
    else:
        body = {"home": HOME, "join": JOIN, "replay": REPLAY}[name]
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>parley workshop: {TITLES[name]}'
            f'</title><style>{STYLE}</style><script>const KEY = {_script_value(context.get("key"))};{COMMON_JS}'
            f'</script></head><body data-page="{name}">'
            f'<header><h1>parley workshop</h1><span class="sub">{TITLES[name]}</span></header>'
            f'<main>{body}</main></body></html>')
