// The live page. It asks api/state for the window in its address
// (?range=15m, live; ?from=…&to=…, RFC 3339, fixed; neither: the server's
// default), then, while the window is live, for what is new since it last
// asked. Per instance, worst first: the doctor's three answers, a strip of
// the latest values, four charts whose legends show the latest (or the
// hovered) value, the findings and, for glassbox, the engine's state. An
// API key goes in the fragment (#key=…): it never reaches a server log.
"use strict";

const key = new URLSearchParams(location.hash.slice(1)).get("key");
const headers = key ? { Authorization: "Bearer " + key } : {};
const PRESETS = ["5m", "15m", "1h", "6h"];
const QUESTIONS = [["compute_saturated", "compute saturated?"], ["kv_limit", "KV cache the limit?"], ["scheduler_idle", "scheduler idle?"]];
const cols = ["t", "dt", "gen_tps", "prompt_tps", "util", "host_share", "mfu", "mbu", "running", "waiting", "waiting_capacity", "kv", "preemptions", "prefill_share", "hit_rate", "spec_acceptance", "spec_tokens_per_pass"];
const lat = ["ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "e2e_p99"];
// The charts: [title, [series key, label, unit, colour 1–7, dash]...]. The
// left axis carries the first unit, the right one the other.
const CHARTS = [
  ["① throughput against utilisation", [["gen_tps", "generation", "tok/s", 1], ["prompt_tps", "prompt", "tok/s", 6, [2, 2]],
    ["util", "GPU utilisation", "%", 2], ["host_share", "GPU waiting for the host", "%", 7, [6, 3]], ["mfu", "MFU", "%", 5], ["mbu", "bandwidth util.", "%", 3, [6, 3]]]],
  ["② the queue against the KV cache", [["running", "running", "req", 1], ["waiting", "waiting", "req", 4], ["waiting_capacity", "waiting for capacity", "req", 2, [4, 3]],
    ["kv", "KV usage", "%", 3]]],
  ["latency quantiles over each interval (log scale)", [["ttft_p50", "TTFT p50", "s", 1], ["ttft_p99", "TTFT p99", "s", 1, [6, 3]],
    ["itl_p50", "ITL p50", "s", 3], ["itl_p99", "ITL p99", "s", 3, [6, 3]], ["e2e_p99", "end-to-end p99", "s", 4, [6, 3]]]],
  ["prefill share of inference time, prefix-cache hit rate, speculative decoding", [["prefill_share", "prefill share", "%", 5], ["hit_rate", "prefix-cache hit rate", "%", 3, [6, 3]],
    ["spec_acceptance", "draft acceptance", "%", 2, [2, 2]], ["spec_tokens_per_pass", "tokens per verify pass", "tokens", 4]]],
];
// nvidia-smi's GPU-Util (DCGM_FI_DEV_GPU_UTIL) reads 100 % under any load
// that keeps a kernel running, saturated or not: the page never shows it,
// and says so beside what it shows instead.
const GPU_UTIL_NOTE = " (Not nvidia-smi's GPU-Util, DCGM_FI_DEV_GPU_UTIL: it reads 100 % under any load that keeps a kernel running, saturated or not.)";
const STRIP = [["gen_tps", "generation", "tok/s"], ["util", "GPU utilisation", "%"], ["running", "running", "req"], ["waiting", "waiting", "req"],
  ["kv", "KV usage", "%"], ["ttft_p99", "TTFT p99", "s"], ["itl_p99", "ITL p99", "s"], ["preemptions", "preemptions in the interval", ""]];

let want = fromAddress();
let since = 0, win = null, interval = 2, timer = null, generation = 0;
const views = new Map(); // by instance name (a Prometheus fleet's order and members change)

// What the tests read: the window, each instance's last point, errors.
window.__glassbox = { ready: false, refreshes: 0, bytes: 0, errors: [], window: null, instances: [] };
window.addEventListener("error", (e) => window.__glassbox.errors.push(String(e.message)));

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
const pad = (n) => String(n).padStart(2, "0");
const num = (v) => v !== null && v !== undefined && Number.isFinite(v);

// fmt writes a value with its unit, to the precision its size needs.
function fmt(v, unit, step) {
  if (!num(v)) return "n/a";
  const d = (x, s) => (s >= 1 || x === 0 ? 0 : Math.min(3, Math.ceil(-Math.log10(s)))); // decimals a step (or a value) needs
  switch (unit) {
    case "%": case "ratio": return v === 0 ? "0%" : (v * 100).toFixed(step ? d(v, step * 100) : Math.abs(v) < 0.1 ? 1 : 0) + "%";
    case "s": return v < 1 ? +(v * 1000).toPrecision(v < 0.001 ? 2 : 3) + " ms" : +v.toPrecision(3) + " s";
    case "tok/s": return Math.abs(v) >= 10000 ? (v / 1000).toFixed(1) + "k tok/s" : (Math.abs(v) >= 100 ? Math.round(v) : +v.toPrecision(3)) + " tok/s";
  }
  const s = Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : String(+v.toPrecision(3));
  return unit && unit !== "req" ? s + " " + unit : s;
}

// An axis label: the unit's format without the unit where the axis says it.
function tick(v, unit, step) {
  if (!num(v)) return ""; // a log axis leaves some unlabelled
  if (unit === "tok/s") return Math.abs(v) >= 1000 ? +(v / 1000).toFixed(step < 1000 ? 1 : 0) + "k" : String(+v.toFixed(step < 1 ? 1 : 0));
  if (unit === "%" || unit === "s") return fmt(v, unit, step);
  return String(+v.toFixed(step < 1 ? 1 : 0));
}

const fmtClock = (t) => { const d = new Date(t * 1000); return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()); };
const fmtDate = (t) => { const d = new Date(t * 1000); return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()); };
const local = (t) => fmtDate(t) + "T" + fmtClock(t); // for datetime-local inputs
function fmtSpan(s) {
  if (s >= 3600) return +(s / 3600).toFixed(1) + " h";
  if (s >= 60) return +(s / 60).toFixed(1) + " min";
  return Math.round(s) + " s";
}
function fmtWindow(from, to) {
  const zone = -new Date(to * 1000).getTimezoneOffset() === 0 ? " UTC" : "";
  return fmtDate(from) + " " + fmtClock(from) + " – " + (fmtDate(from) === fmtDate(to) ? "" : fmtDate(to) + " ") + fmtClock(to) + zone + " (" + fmtSpan(to - from) + ")";
}

// The window the address asks for.
function fromAddress() {
  const q = new URLSearchParams(location.search);
  const from = Date.parse(q.get("from") || ""), to = Date.parse(q.get("to") || "");
  if (Number.isFinite(from) && Number.isFinite(to) && to > from) return { from: from / 1000, to: to / 1000 };
  return q.get("range") ? { range: q.get("range") } : {};
}

function setWant(w) {
  want = w;
  edited = false;
  const q = new URLSearchParams();
  if (w.range) q.set("range", w.range);
  if (w.from) { q.set("from", new Date(w.from * 1000).toISOString().replace(".000Z", "Z")); q.set("to", new Date(w.to * 1000).toISOString().replace(".000Z", "Z")); }
  history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q : "") + location.hash);
  generation++;
  since = 0;
  for (const v of views.values()) v.sec.remove();
  views.clear();
  clearTimeout(timer);
  loop();
}

function drawControls() {
  const box = document.getElementById("presets");
  box.replaceChildren(...PRESETS.map((p) => {
    const b = el("button", { type: "button", class: win && win.live && win.range_s === presetSeconds(p) ? "on" : "" }, p);
    b.onclick = () => setWant({ range: p });
    return b;
  }));
  if (win && !edited) { // the window shown, unless a range is being typed
    document.getElementById("from").value = local(win.from);
    document.getElementById("to").value = local(win.to);
  }
}
let edited = false;
for (const id of ["from", "to"]) document.getElementById(id).addEventListener("input", () => { edited = true; });
const presetSeconds = (p) => parseFloat(p) * (p.endsWith("h") ? 3600 : 60);
document.getElementById("apply").onclick = () => {
  const from = new Date(document.getElementById("from").value).getTime() / 1000, to = new Date(document.getElementById("to").value).getTime() / 1000;
  if (Number.isFinite(from) && Number.isFinite(to) && to > from) setWant({ from, to });
};

// A y scale's range: ratios 0–100 % (more when a value is above), counts
// and rates from 0, latencies on a log scale.
function range(unit) {
  if (unit === "s") return (u, min, max) => (num(min) && num(max) ? uPlot.rangeLog(min, max, 10, true) : [0.001, 1]);
  if (unit === "%") return (u, min, max) => [0, num(max) && max > 1 ? max * 1.05 : 1];
  return (u, min, max) => [0, num(max) && max > 0 ? max * 1.1 : 1];
}

// A log axis's ticks: 1, 2, 5 per decade, or the decades alone when many.
function logSplits(u, ax, min, max) {
  const out = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
    for (const m of [1, 2, 5]) { const v = +(m + "e" + e); if (v >= min * 0.999 && v <= max * 1.001) out.push(v); }
  }
  return out.length > 7 ? out.filter((v) => v.toExponential().startsWith("1")) : out;
}

// The 0.9 watermark across chart ②, and a tick where preemptions happened.
function queuePlugin(view) {
  return { hooks: { draw: (u) => {
    const ctx = u.ctx, c4 = css("--c4"), y = u.valToPos(0.9, "%", true);
    ctx.save();
    ctx.strokeStyle = ctx.fillStyle = c4;
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(u.bbox.left, y);
    ctx.lineTo(u.bbox.left + u.bbox.width, y);
    ctx.stroke();
    ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
    ctx.globalAlpha = 0.85;
    ctx.fillText("0.9 KV watermark (preemption line)", u.bbox.left + 6, y - 4);
    const p = view.data.preemptions;
    for (let i = 0; i < p.length; i++) {
      if (p[i] > 0) ctx.fillRect(u.valToPos(view.data.t[i], "x", true) - devicePixelRatio / 2, u.bbox.top + u.bbox.height - 8 * devicePixelRatio, devicePixelRatio, 8 * devicePixelRatio);
    }
    ctx.restore();
  } } };
}

function chart(view, parent, title, series) {
  const units = [...new Set(series.map((s) => s[2]))];
  const legend = el("div", { class: "legend" });
  const div = el("div", {});
  parent.append(el("div", { class: "chart" }, el("h3", {}, title), div, legend));
  const fg = css("--muted"), grid = css("--grid"), font = "11px system-ui, sans-serif";
  const measure = document.createElement("canvas").getContext("2d");
  measure.font = font;
  const scales = { x: { time: true, range: () => [win.from, win.to] } };
  for (const unit of units) scales[unit] = unit === "s" ? { distr: 3, log: 10, range: range(unit) } : { range: range(unit) };
  const axes = [{ stroke: fg, font, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, space: 70,
    values: (u, splits, ax, space, incr) => splits.map((t) => (incr >= 86400 ? fmtDate(t) : incr >= 60 ? fmtClock(t).slice(0, 5) : fmtClock(t))) }].concat(units.map((unit, i) => ({
    scale: unit, side: i === 0 ? 3 : 1, stroke: fg, font, grid: { show: i === 0, stroke: grid, width: 1 }, ticks: { stroke: grid },
    splits: unit === "s" ? logSplits : undefined,
    values: (u, splits, ax, space, incr) => splits.map((v) => tick(v, unit, incr)),
    size: (u, values) => 14 + Math.max(24, ...(values || []).map((v) => measure.measureText(v).width)),
    label: unit === "%" ? "" : unit === "req" ? "requests" : unit === "s" ? "" : unit, labelSize: unit === "tok/s" || unit === "req" ? 16 : 0, labelFont: font,
  })));
  const c = { keys: series.map((s) => s[0]), units: series.map((s) => s[2]), values: [] };
  legend.append(...series.map((s) => {
    const v = el("span", { class: "v", "data-series": s[0] }, "n/a");
    c.values.push(v);
    return el("span", {}, el("span", { class: "s", style: `border-top-color:${css("--c" + s[3])};border-top-style:${s[4] ? "dashed" : "solid"}` }), s[1], v);
  }));
  const opts = {
    width: Math.max(300, div.clientWidth), height: 220, scales, axes,
    legend: { show: false }, cursor: { sync: { key: "i:" + view.name }, points: { show: false } },
    series: [{}].concat(series.map((s) => ({ label: s[1], stroke: css("--c" + s[3]), width: s[0] === "gen_tps" || s[0] === "kv" ? 2.2 : 1.6, dash: s[4], scale: s[2], spanGaps: true, points: { show: false } }))),
    hooks: { setCursor: [(u) => showAt(view, u.cursor.idx)] },
    plugins: title.startsWith("②") ? [queuePlugin(view)] : [],
  };
  c.u = new uPlot(opts, [[]].concat(series.map(() => [])), div);
  return c;
}

// The latest value of a series (before the first interval, the reading's
// own gauges), or its value at idx (a hovered time).
function valueAt(view, k, idx) {
  const d = view.data[k];
  if (idx !== null && idx !== undefined) return d[idx];
  for (let i = d.length - 1; i >= 0; i--) if (num(d[i])) return d[i];
  return (view.last || {})[k];
}

// showAt writes every legend and the strip at idx (null: the latest).
function showAt(view, idx) {
  if (view.syncing) return;
  const show = (k, unit) => { const v = valueAt(view, k, idx); return num(v) || view.readings !== 1 ? fmt(v, unit) : "needs 2 readings"; };
  for (const c of view.charts) c.keys.forEach((k, i) => { c.values[i].textContent = show(k, c.units[i]); });
  for (const [k, , unit] of STRIP) {
    view.strip[k].textContent = show(k, unit);
    view.strip[k].classList.toggle("na", !num(valueAt(view, k, idx)));
  }
  const n = view.data.t.length;
  view.when.textContent = idx !== null && idx !== undefined ? "at " + fmtClock(view.data.t[idx]) : n ? "latest, " + fmtClock(view.data.t[n - 1]) : "";
}

function newView(inst) {
  const sec = el("section", { class: "instance", id: "instance-" + inst.name, "data-instance": inst.name });
  const view = { name: inst.name, sec, data: {}, charts: [], strip: {}, drawn: {} };
  view.title = el("h2", {});
  view.answers = el("div", { class: "answers" });
  view.answered = el("div", { class: "answered" });
  view.notice = el("div", { class: "notice", hidden: "" });
  const strip = el("div", { class: "strip" });
  for (const [k, label] of STRIP) {
    view.strip[k] = el("div", { class: "v", "data-strip": k }, "n/a");
    strip.append(el("div", {}, el("div", { class: "k" }, label), view.strip[k]));
  }
  view.when = el("div", { class: "when" });
  strip.append(view.when);
  view.utilNote = el("div", { class: "muted why", "data-util-note": "" });
  view.chartBox = el("div", { class: "charts" });
  view.findings = el("div", { class: "findings" });
  view.engine = el("div", { class: "engine" });
  sec.append(view.title, view.answers, view.answered, view.notice, strip, view.utilNote, view.chartBox, view.findings, view.engine);
  document.getElementById("instances").append(sec);
  for (const c of cols.concat(lat)) view.data[c] = [];
  build(view);
  return view;
}

// build (re)draws an instance's charts: on creation, and when the colour
// scheme changes (canvas colours are not CSS).
function build(view) {
  for (const c of view.charts) c.u.destroy();
  view.chartBox.replaceChildren();
  view.charts = CHARTS.map(([title, series]) => chart(view, view.chartBox, title, series));
  redraw(view);
}

function redraw(view) {
  view.syncing = true;
  for (const c of view.charts) c.u.setData([view.data.t].concat(c.keys.map((k) => (c.units[c.keys.indexOf(k)] === "s" ? view.data[k].map((v) => (v > 0 ? v : null)) : view.data[k]))));
  view.syncing = false;
  showAt(view, null);
}

// merge appends what is new and drops what left the window; it says
// whether anything changed.
function merge(view, s) {
  const n = view.data.t.length, last = n ? view.data.t[n - 1] : -Infinity;
  const from = (s.t || []).findIndex((t) => t > last);
  if (from >= 0) {
    for (const c of cols) view.data[c].push(...(s[c] || []).slice(from));
    for (const c of lat) view.data[c].push(...((s.latency || {})[c] || []).slice(from));
  }
  let drop = 0;
  while (drop < view.data.t.length && view.data.t[drop] < win.from) drop++;
  if (drop > 0) for (const c of cols.concat(lat)) view.data[c].splice(0, drop);
  return from >= 0 || drop > 0;
}

// changed says whether what a part of the view was drawn from changed
// (redrawing the DOM costs more than comparing).
function changed(view, part, ...from) {
  const s = JSON.stringify(from);
  if (view.drawn[part] === s) return false;
  view.drawn[part] = s;
  return true;
}

// The three questions, as the doctor answers them over the window below.
function drawAnswers(view, inst, mode, doctor) {
  view.answers.replaceChildren(...QUESTIONS.map(([k, label]) => {
    const a = (inst.questions || {})[k] || { answer: "can't tell", summary: inst.readings ? "" : "no reading in this window" };
    const cls = a.answer === "yes" ? "yes" : a.answer === "no" ? "no" : "cant-tell";
    const word = (a.answer || "can't tell").toUpperCase();
    return el("div", { class: "answer " + cls, "data-question": k, "data-answer": a.answer || "" },
      el("div", { class: "q" }, label), el("div", { class: "a" }, word, a.kind ? el("small", {}, " · " + a.kind) : ""),
      el("div", { class: "why" }, a.summary || ""), a.confidence ? el("div", { class: "muted why" }, "confidence " + a.confidence + "; " + (a.sources || []).join(", ")) : "");
  }));
  const an = inst.answered;
  const over = !an ? "" : an.to > an.from ? "over " + fmtWindow(an.from, an.to) + (win.live && mode === "sampled" ? ", the most recent part of the window" : "") : "at the reading of " + fmtDate(an.to) + " " + fmtClock(an.to);
  view.answered.replaceChildren(an ? "The doctor's answers " + over + "." : "");
  if (doctor) view.answered.append(" The same answers: ", el("code", {}, doctor));
}

function drawFindings(view, findings) {
  view.findings.replaceChildren(el("h3", {}, "the doctor's findings"));
  if (!findings || findings.length === 0) {
    view.findings.append(el("p", {}, "no findings: nothing in this window points at a bottleneck"));
    return;
  }
  for (const f of findings) {
    const ev = el("table", {});
    for (const e of f.evidence || []) ev.append(el("tr", {}, el("td", {}, e.what), el("td", {}, fmt(e.value, e.unit === "ratio" ? "%" : e.unit))));
    const fixes = (f.recommended_changes || []).map((c) => el("div", { class: "fix" }, "fix: " + [c.flag, c.value].filter(Boolean).join(" ") + (c.why ? (c.flag ? "  (" + c.why + ")" : c.why) : "")));
    view.findings.append(el("div", { class: "finding " + f.severity, "data-finding": f.name },
      el("div", { class: "title" }, "[" + f.severity.toUpperCase() + "] " + f.name + " — " + f.title),
      el("div", { class: "meta" }, "sources: " + (f.sources || []).join(", ") + "; confidence " + (f.confidence || "")),
      ev, el("div", {}, f.inference), ...fixes));
  }
}

// The fleet: one compact row per instance, worst first.
function drawFleet(st) {
  const box = document.getElementById("fleet");
  box.hidden = st.instances.length < 2;
  if (box.hidden) return;
  const head = ["instance", "worst", ...QUESTIONS.map((q) => q[1]), "generation", "running", "waiting", "KV usage", "TTFT p99", "findings"];
  const t = el("table", { class: "rows" }, el("tr", {}, ...head.map((h) => el("th", {}, h))));
  for (const inst of st.instances) {
    const v = views.get(inst.name);
    const n = (k, unit) => el("td", { class: "n" }, fmt(valueAt(v, k, null), unit));
    t.append(el("tr", { "data-row": inst.name }, el("td", {}, el("a", { href: "#instance-" + inst.name }, inst.name)), el("td", {}, el("span", { class: "sev " + (inst.worst || "") }, inst.worst || "—")),
      ...QUESTIONS.map(([k]) => { const a = ((inst.questions || {})[k] || {}).answer || "can't tell"; return el("td", {}, el("span", { class: "chip " + a.replace("'", "").replace(" ", "-") }, a)); }),
      n("gen_tps", "tok/s"), n("running", "req"), n("waiting", "req"), n("kv", "%"), n("ttft_p99", "s"), el("td", {}, (inst.findings || []).map((f) => f.name).join(", ") || "—")));
  }
  const fl = (st.fleet_findings || []).map((f) => el("div", { class: "finding " + f.severity, "data-finding": f.name }, el("div", { class: "title" }, "[" + f.severity.toUpperCase() + "] " + f.name + " — " + f.title), el("div", {}, f.inference)));
  box.replaceChildren(el("div", {}, el("h2", {}, "fleet ", el("small", {}, st.instances.length + " instances, worst first")), t, ...fl));
}

async function drawEngine(view, i) {
  try {
    const r = await fetch("api/engine?instance=" + i, { headers });
    if (!r.ok) return;
    const e = await r.json();
    const b = e.block_pool;
    const pct = (n) => (100 * n / Math.max(b.total, 1)).toFixed(1) + "%";
    const bar = el("div", { class: "bar", title: "in use / cached / free" },
      el("div", { style: "background:var(--c4);width:" + pct(b.in_use) }), el("div", { style: "background:var(--c2);width:" + pct(b.cached) }), el("div", { style: "background:var(--grid);width:" + pct(b.free - b.cached) }));
    const rows = el("table", {}, el("tr", {}, ...["request", "state", "prompt computed", "output", "blocks", "preemptions", "age s"].map((h) => el("th", {}, h))));
    for (const q of (e.running || []).concat(e.waiting || []).slice(0, 24)) {
      rows.append(el("tr", {}, el("td", {}, q.id.slice(0, 12)), el("td", {}, q.state), el("td", {}, q.prompt_tokens_computed + "/" + q.prompt_tokens),
        el("td", {}, q.output_tokens + "/" + q.max_tokens), el("td", {}, String(q.blocks_held)), el("td", {}, String(q.preemptions)), el("td", {}, q.age_seconds.toFixed(1))));
    }
    view.engine.replaceChildren(el("h3", {}, "the engine (GET /debug/engine)"),
      el("div", {}, `block pool: ${b.in_use} in use, ${b.cached} cached, ${b.free} free of ${b.total}; ${(e.running || []).length} running, ${(e.waiting || []).length} waiting; ${e.steps} steps, ${e.preemptions} preemptions`),
      bar, rows);
  } catch (err) {
    window.__glassbox.errors.push("engine: " + err);
  }
}

function stateURL() {
  const q = new URLSearchParams();
  if (want.from) { q.set("from", want.from); q.set("to", want.to); } else if (want.range) q.set("range", want.range);
  if (since) q.set("since", since);
  return "api/state?" + q;
}

async function refresh() {
  const gen = generation;
  const status = document.getElementById("status");
  const r = await fetch(stateURL(), { headers });
  if (gen !== generation) return;
  if (!r.ok) {
    let msg = "";
    try { msg = (await r.json()).error.message; } catch (e) { /* not JSON */ }
    status.textContent = "error " + r.status + (r.status === 401 ? ": add #key=YOUR-API-KEY to the address" : msg ? ": " + msg : "");
    return;
  }
  const text = await r.text();
  const t0 = performance.now();
  window.__glassbox.bytes += text.length;
  const st = JSON.parse(text);
  win = st.window;
  interval = st.interval_s;
  const problem = document.getElementById("problem");
  problem.hidden = !st.problem;
  problem.textContent = st.problem ? "Could not read the window: " + st.problem : "";
  const order = [];
  for (const inst of st.instances) {
    const view = views.get(inst.name) || views.set(inst.name, newView(inst)).get(inst.name);
    order.push(view.sec);
    view.last = inst.series.last;
    view.readings = inst.readings;
    if (merge(view, inst.series) | changed(view, "window", win.from, win.to)) redraw(view);
    view.title.replaceChildren(inst.name + " ", el("small", {}, [inst.engine, inst.worst ? "worst: " + inst.worst : ""].filter(Boolean).join(" · ")));
    if (changed(view, "answers", inst.questions, inst.answered, st.doctor)) drawAnswers(view, inst, st.mode, st.doctor);
    const n = view.data.t.length, last = inst.series.last || {};
    view.notice.hidden = !(inst.problem || n === 0);
    view.notice.textContent = inst.problem ? "the last reading failed: " + inst.problem
      : inst.readings === 1 ? `one reading so far: running ${fmt(last.running)}, waiting ${fmt(last.waiting)}, KV usage ${fmt(last.kv, "%")}. Rates, latencies and trends need two readings; the charts fill as they come (every ${fmtSpan(interval)}).`
      : inst.readings === 0 ? "no reading in this window" : "";
    if (changed(view, "util", inst.series.util_what)) view.utilNote.textContent = inst.series.util_what ? inst.series.util_what + "." + GPU_UTIL_NOTE : "";
    if (changed(view, "findings", inst.findings)) drawFindings(view, inst.findings);
    if (inst.has_engine_state && win.live) drawEngine(view, inst.id);
    window.__glassbox.instances[order.length - 1] = {
      id: inst.id, name: inst.name, points: n, findings: (inst.findings || []).map((f) => f.name),
      questions: inst.questions ? Object.fromEntries(QUESTIONS.map(([k]) => [k, inst.questions[k].answer])) : null,
      get x() { const x = view.charts[0].u.scales.x; return [x.min, x.max]; }, // as drawn
      ...Object.fromEntries(cols.map((c) => [c, n ? view.data[c][n - 1] : null])),
      gen_tokens: view.data.gen_tps.reduce((acc, v, k) => acc + (v || 0) * view.data.dt[k], 0),
    };
    if (n) since = Math.max(since, view.data.t[n - 1]);
  }
  window.__glassbox.instances.length = order.length;
  document.getElementById("instances").append(...order); // worst first
  drawFleet(st);
  drawControls();
  window.__glassbox.window = win;
  setTimeout(() => { window.__glassbox.drawMs = performance.now() - t0; }); // parse and draw (uPlot draws in a microtask), for the tests' log
  window.__glassbox.refreshes++;
  window.__glassbox.ready = true;
  const src = st.mode === "prometheus" ? "Prometheus at " + win.step_s + " s steps" : "sampled every " + fmtSpan(interval);
  status.textContent = (win.live ? "live: " : "window: ") + fmtWindow(win.from, win.to) + " · " + src +
    (st.mode === "sampled" && st.kept_from && st.kept_from > win.from + 1 ? " · kept since " + fmtClock(st.kept_from) : "") +
    (win.live ? " · updated " + new Date().toLocaleTimeString() : "");
}

async function loop() {
  const gen = generation;
  try {
    await refresh();
  } catch (err) {
    window.__glassbox.errors.push(String(err));
    document.getElementById("status").textContent = "error: " + err;
  }
  if (gen === generation && (!win || win.live)) timer = setTimeout(loop, Math.max(1, Math.min(5, interval)) * 1000);
}

matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => { for (const v of views.values()) build(v); });
addEventListener("resize", () => { for (const v of views.values()) for (const c of v.charts) c.u.setSize({ width: Math.max(300, c.u.root.parentElement.clientWidth), height: 220 }); });
drawControls();
loop();
