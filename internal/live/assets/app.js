// The live page: polls api/state for what is new since the last answer,
// keeps the history it was given (bounded like the server's), and draws
// it with uPlot. An API key goes in the URL fragment (#key=…): it never
// reaches a server log, and is sent as a bearer token.
"use strict";

const key = new URLSearchParams(location.hash.slice(1)).get("key");
const headers = key ? { Authorization: "Bearer " + key } : {};
const HISTORY = 15 * 60; // seconds kept, as the server keeps
const views = []; // one per instance
let since = 0;
let interval = 2;

// What the tests read: the latest drawn point of each instance, and errors.
window.__glassbox = { ready: false, refreshes: 0, bytes: 0, errors: [], instances: [] };
window.addEventListener("error", (e) => window.__glassbox.errors.push(String(e.message)));

const cols = ["t", "dt", "gen_tps", "prompt_tps", "util", "host_share", "mfu", "mbu", "running", "waiting", "waiting_capacity", "kv", "preemptions", "prefill_share", "hit_rate"];
const lat = ["ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "e2e_p99"];

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

function fmt(v, unit) {
  if (v === null || v === undefined) return "n/a";
  if (unit === "s") return v < 1 ? (v * 1000).toFixed(1) + " ms" : v.toFixed(3) + " s";
  if (unit === "ratio") return (v * 100).toFixed(1) + "%";
  if (Math.abs(v) >= 100) return Math.round(v).toString();
  return (Math.round(v * 1000) / 1000).toString();
}

// The 0.9 watermark across chart 2, and a red tick where preemptions happened.
function queuePlugin(view) {
  return {
    hooks: {
      draw: (u) => {
        const ctx = u.ctx;
        ctx.save();
        const y = u.valToPos(0.9, "ratio", true);
        ctx.strokeStyle = "#d33";
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(u.bbox.left, y);
        ctx.lineTo(u.bbox.left + u.bbox.width, y);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = "#d33";
        ctx.font = "11px sans-serif";
        ctx.fillText("0.9 KV watermark (preemption line)", u.bbox.left + 6, y - 4);
        const p = view.data.preemptions;
        for (let i = 0; i < p.length; i++) {
          if (p[i] > 0) {
            const x = u.valToPos(view.data.t[i], "x", true);
            ctx.fillRect(x - 1, u.bbox.top + u.bbox.height - 12, 3, 12);
          }
        }
        ctx.restore();
      },
    },
  };
}

function chart(view, parent, title, series, scales, plugins) {
  const box = el("div", { class: "chart" }, el("h3", {}, title));
  const div = el("div", {});
  box.append(div);
  parent.append(box);
  const opts = {
    width: 560, height: 220, scales: Object.assign({ x: { time: true } }, scales),
    series: [{}].concat(series.map((s) => ({ label: s.label, stroke: s.color, width: 1.6, scale: s.scale, spanGaps: true, points: { show: false }, dash: s.dash }))),
    axes: [{}].concat(Object.keys(scales).map((sc, i) => ({ scale: sc, side: i === 0 ? 3 : 1, size: 64, grid: { show: i === 0 }, values: (u, v) => v.map((x) => sc === "ratio" ? (x * 100).toFixed(0) + "%" : fmt(x, scales[sc].unit)) }))),
    plugins: plugins || [],
  };
  const u = new uPlot(opts, [[]].concat(series.map(() => [])), div);
  return { u, keys: series.map((s) => s.key), div };
}

function newView(i, inst) {
  const sec = el("section", { class: "instance", id: "instance-" + i });
  const notice = el("div", { class: "notice", hidden: "" });
  const charts = el("div", { class: "charts" });
  const questions = el("div", { class: "questions" });
  const findings = el("div", { class: "findings" });
  const engine = el("div", { class: "engine" });
  sec.append(el("h2", {}, inst.name + " ", el("small", {}, inst.engine)), questions, notice, charts, findings, engine);
  document.getElementById("instances").append(sec);
  const view = { sec, notice, questions, findings, engine, data: {}, charts: [], inst };
  for (const c of cols) view.data[c] = [];
  for (const c of lat) view.data[c] = [];
  const ratio = { range: [0, 1], unit: "ratio" };
  view.charts.push(chart(view, charts, "① throughput against utilisation", [
    { key: "gen_tps", label: "generation tok/s", color: "#2a7ab0", scale: "tps" },
    { key: "prompt_tps", label: "prompt tok/s", color: "#7fb3d5", scale: "tps" },
    { key: "util", label: "utilisation", color: "#e07b00", scale: "ratio" },
    { key: "host_share", label: "GPU waiting for the host", color: "#7f8c8d", scale: "ratio", dash: [4, 3] },
    { key: "mfu", label: "MFU", color: "#8e44ad", scale: "ratio" },
    { key: "mbu", label: "bandwidth util.", color: "#16a085", scale: "ratio" },
  ], { tps: { unit: "" }, ratio }));
  view.charts.push(chart(view, charts, "② the queue against the KV cache", [
    { key: "running", label: "running", color: "#2a7ab0", scale: "n" },
    { key: "waiting", label: "waiting", color: "#c0392b", scale: "n" },
    { key: "waiting_capacity", label: "waiting for capacity", color: "#e67e22", scale: "n", dash: [4, 3] },
    { key: "kv", label: "KV usage", color: "#27ae60", scale: "ratio" },
  ], { n: { unit: "" }, ratio }, [queuePlugin(view)]));
  view.charts.push(chart(view, charts, "latency quantiles over each interval", [
    { key: "ttft_p50", label: "TTFT p50", color: "#2a7ab0", scale: "s" },
    { key: "ttft_p99", label: "TTFT p99", color: "#7fb3d5", scale: "s" },
    { key: "itl_p50", label: "ITL p50", color: "#27ae60", scale: "s" },
    { key: "itl_p99", label: "ITL p99", color: "#82e0aa", scale: "s" },
    { key: "e2e_p99", label: "end-to-end p99", color: "#c0392b", scale: "s" },
  ], { s: { unit: "s" } }));
  view.charts.push(chart(view, charts, "prefill share of inference time, prefix-cache hit rate", [
    { key: "prefill_share", label: "prefill share", color: "#8e44ad", scale: "ratio" },
    { key: "hit_rate", label: "prefix-cache hit rate", color: "#16a085", scale: "ratio" },
  ], { ratio }));
  return view;
}

function merge(view, s) {
  for (const c of cols) view.data[c].push(...(s[c] || []));
  for (const c of lat) view.data[c].push(...((s.latency || {})[c] || []));
  const t = view.data.t;
  let drop = 0;
  while (drop < t.length && t[t.length - 1] - t[drop] > HISTORY) drop++;
  if (drop > 0) for (const c of cols.concat(lat)) view.data[c].splice(0, drop);
}

// The three questions every report answers first, as the doctor answers them.
function drawQuestions(view, q) {
  view.questions.replaceChildren();
  if (!q) return;
  for (const [key, label] of [["compute_saturated", "compute saturated?"], ["kv_limit", "KV cache the limit?"], ["scheduler_idle", "scheduler idle?"]]) {
    const a = q[key] || {};
    const ans = (a.answer || "can't tell") + (a.kind ? " (" + a.kind + ")" : "");
    view.questions.append(el("div", { class: "question " + (a.answer || "").replace("'", "").replace(" ", "-"), "data-question": key, "data-answer": a.answer || "" },
      el("span", { class: "q" }, label), el("span", { class: "a" }, ans), el("span", { class: "why" }, a.summary || "")));
  }
}

function drawFindings(view, findings) {
  view.findings.replaceChildren(el("h3", {}, "the doctor's current findings"));
  if (!findings || findings.length === 0) {
    view.findings.append(el("p", {}, "no findings: nothing in the last minutes points at a bottleneck"));
    return;
  }
  for (const f of findings) {
    const ev = el("table", {});
    for (const e of f.evidence || []) ev.append(el("tr", {}, el("td", {}, e.what), el("td", {}, fmt(e.value, e.unit) + (e.unit && e.unit !== "ratio" && e.unit !== "s" ? " " + e.unit : ""))));
    const fixes = (f.recommended_changes || []).map((c) => el("div", { class: "fix" }, "fix: " + [c.flag, c.value].filter(Boolean).join(" ") + (c.why ? (c.flag ? "  (" + c.why + ")" : c.why) : "")));
    view.findings.append(el("div", { class: "finding " + f.severity, "data-finding": f.name },
      el("div", { class: "title" }, "[" + f.severity.toUpperCase() + "] " + f.name + " — " + f.title),
      el("div", { class: "meta" }, "sources: " + (f.sources || []).join(", ") + "; confidence " + (f.confidence || "")),
      ev, el("div", {}, f.inference), ...fixes));
  }
}

async function drawEngine(view, i) {
  try {
    const r = await fetch("api/engine?instance=" + i, { headers });
    if (!r.ok) return;
    const e = await r.json();
    const b = e.block_pool;
    const pct = (n) => (100 * n / Math.max(b.total, 1)).toFixed(1) + "%";
    const bar = el("div", { class: "bar", title: "in use / cached / free" },
      el("div", { style: "background:#c0392b;width:" + pct(b.in_use) }), el("div", { style: "background:#f5b041;width:" + pct(b.cached) }), el("div", { style: "background:#d5f5e3;width:" + pct(b.free - b.cached) }));
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

async function refresh() {
  try {
    const r = await fetch("api/state?since=" + since, { headers });
    if (!r.ok) {
      document.getElementById("status").textContent = "error " + r.status + (r.status === 401 ? ": add #key=YOUR-API-KEY to the address" : "");
      return;
    }
    const text = await r.text();
    window.__glassbox.bytes += text.length;
    const st = JSON.parse(text);
    interval = st.interval_s;
    st.instances.forEach((inst, i) => {
      const view = views[i] || (views[i] = newView(i, inst));
      merge(view, inst.series);
      const n = view.data.t.length;
      for (const c of view.charts) c.u.setData([view.data.t].concat(c.keys.map((k) => view.data[k])));
      const last = inst.series.last || {};
      if (n === 0) {
        view.notice.hidden = false;
        view.notice.textContent = inst.readings <= 1
          ? `one reading so far: running ${fmt(last.running)}, waiting ${fmt(last.waiting)}, KV usage ${fmt(last.kv, "ratio")}. Rates, latencies and trends need two readings; the charts fill as they come.`
          : "no interval since the last refresh";
      } else if (inst.problem) {
        view.notice.hidden = false;
        view.notice.textContent = "the last reading failed: " + inst.problem;
      } else {
        view.notice.hidden = true;
      }
      drawQuestions(view, inst.questions);
      drawFindings(view, inst.findings);
      if (inst.has_engine_state) drawEngine(view, i);
      const point = {};
      for (const c of cols) point[c] = n ? view.data[c][n - 1] : null;
      point.points = n;
      point.findings = (inst.findings || []).map((f) => f.name);
      point.questions = inst.questions ? Object.fromEntries(Object.entries(inst.questions).map(([k, a]) => [k, a.answer])) : null;
      point.gen_tokens = view.data.gen_tps.reduce((acc, v, k) => acc + (v || 0) * view.data.dt[k], 0);
      window.__glassbox.instances[i] = point;
      const lastT = n ? view.data.t[n - 1] : since;
      since = Math.max(since, lastT);
    });
    window.__glassbox.refreshes++;
    window.__glassbox.ready = true;
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString() + ", every " + interval + " s; " +
      st.instances.map((x) => x.name + ": " + x.readings + " readings").join("; ");
  } catch (err) {
    window.__glassbox.errors.push(String(err));
    document.getElementById("status").textContent = "error: " + err;
  }
}

(async function loop() {
  await refresh();
  setTimeout(loop, Math.max(1, Math.min(5, interval)) * 1000);
})();
