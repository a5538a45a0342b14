// fleetlimit explorer: reads the form, asks /api/run, draws the timeline
// and the figures. No dependencies; everything it needs is served by the
// fleetlimit process.
"use strict";

// Okabe and Ito's colours, told apart with any common colour-vision
// deficiency, then grey, black and brown; a dash pattern per design too.
const colours = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#808080", "#000000", "#884C00"];
const dashes = ["", "6 3", "1.5 2", "6 2 1.5 2", "10 3"];
const fields = ["gateways", "sync", "limit", "window", "traffic", "routing", "duration", "seed", "rtt", "loss"];
let designs = [];
let pending = null;
let generation = 0;

function query() {
  const q = new URLSearchParams();
  const picked = designs.filter(d => document.getElementById("d-" + d).checked);
  q.set("designs", picked.join(","));
  for (const f of fields) q.set(f, document.getElementById(f).value);
  return q;
}

function showError(msg) {
  const e = document.getElementById("error");
  e.textContent = msg;
  e.hidden = !msg;
}

async function run() {
  const gen = ++generation;
  const q = query();
  if (!q.get("designs")) { showError("designs: pick at least one"); return; }
  document.getElementById("status").textContent = "running…";
  let resp, body;
  try {
    resp = await fetch("api/run?" + q.toString());
    body = await resp.json();
  } catch (err) {
    if (gen === generation) showError("the explorer did not answer: " + err);
    return;
  }
  if (gen !== generation) return; // a newer request is on its way
  if (!resp.ok) {
    showError(body.error || ("error " + resp.status));
    document.getElementById("status").textContent = "not run: fix the value above; below, greyed, the last run";
    stale(true);
    return;
  }
  showError("");
  stale(false);
  render(body);
}

// stale greys the last run's chart and figures while the form's values
// cannot be run.
function stale(on) {
  for (const id of ["chart", "summary"]) document.getElementById(id).classList.toggle("stale", on);
}

function schedule() {
  clearTimeout(pending);
  pending = setTimeout(run, 250);
}

function render(r) {
  const tbody = document.querySelector("#summary tbody");
  tbody.replaceChildren();
  r.runs.forEach((run, i) => {
    const tr = document.createElement("tr");
    tr.dataset.design = run.design;
    const name = document.createElement("td");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.borderColor = colours[i % colours.length];
    sw.style.borderTopStyle = i % dashes.length === 0 ? "solid" : "dashed";
    const pic = document.createElement("a");
    const q = query();
    q.set("designs", run.design);
    pic.href = "api/timeline.svg?" + q.toString();
    pic.className = "picture";
    pic.target = "_blank";
    pic.textContent = "picture";
    pic.title = "this design's run drawn: admits in the window, each gateway's view, syncs and round trips";
    name.append(sw, run.design, " ", pic);
    tr.append(name);
    for (const [k, digits] of [["admitted_x", 3], ["worst_window_x", 3], ["rejected_pct", 3], ["round_trip_pct", 2]]) {
      const td = document.createElement("td");
      td.className = k;
      td.textContent = run[k].toFixed(digits);
      tr.append(td);
    }
    tbody.append(tr);
  });
  draw(r);
  document.getElementById("status").textContent = "each design as fleetlimit sim --design D " + r.params.replace(/^fleetlimit sim /, "");
  document.body.dataset.params = r.params;
}

function draw(r) {
  const svg = document.getElementById("chart");
  const W = 760, H = 300, left = 48, right = 12, top = 12, bottom = 34;
  const n = Math.max(...r.runs.map(x => x.in_window_x.length));
  const span = n * (r.runs[0] ? r.runs[0].bucket_seconds : 1);
  const ymax = Math.max(1.2, ...r.runs.flatMap(x => x.in_window_x)) * 1.05;
  const X = t => left + (W - left - right) * t / span;
  const Y = v => H - bottom - (H - top - bottom) * v / ymax;
  const el = (tag, attrs, text) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  svg.replaceChildren();
  for (let v = 0; v <= ymax; v += ymax > 6 ? 2 : ymax > 3 ? 1 : 0.5) {
    svg.append(el("line", { x1: left, x2: W - right, y1: Y(v), y2: Y(v), stroke: "#eee" }));
    svg.append(el("text", { x: left - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11 }, v.toFixed(1)));
  }
  svg.append(el("line", { x1: left, x2: W - right, y1: Y(1), y2: Y(1), stroke: "#444", "stroke-dasharray": "3 3" }));
  svg.append(el("text", { x: W - right, y: Y(1) - 4, "text-anchor": "end", "font-size": 11 }, "L"));
  for (let k = 0; k <= 5; k++) {
    const t = span * k / 5;
    svg.append(el("text", { x: X(t), y: H - bottom + 16, "text-anchor": "middle", "font-size": 11 }, fmtTime(t)));
  }
  svg.append(el("text", { x: (W + left) / 2, y: H - 4, "text-anchor": "middle", "font-size": 12 },
    "time; the fleet's admits in the window ending then, × L"));
  r.runs.forEach((run, i) => {
    const pts = run.in_window_x.map((v, j) => X((j + 1) * run.bucket_seconds).toFixed(1) + "," + Y(v).toFixed(1));
    svg.append(el("polyline", { points: pts.join(" "), fill: "none", stroke: colours[i % colours.length],
      "stroke-width": 2, "stroke-dasharray": dashes[i % dashes.length], "data-design": run.design }));
  });
}

function fmtTime(s) {
  if (s >= 3600) return (s / 3600).toFixed(1) + "h";
  if (s >= 60) return (s / 60).toFixed(s % 60 ? 1 : 0) + "m";
  return s.toFixed(0) + "s";
}

async function start() {
  const r = await fetch("api/designs");
  designs = (await r.json()).designs;
  const box = document.getElementById("designs");
  for (const d of designs) {
    const label = document.createElement("label");
    const cb = document.createElement("input");
    cb.type = "checkbox";
    cb.id = "d-" + d;
    cb.checked = d === "shared-counter" || d === "headroom";
    label.append(cb, " " + d);
    box.append(label);
  }
  document.getElementById("params").addEventListener("input", schedule);
  document.getElementById("params").addEventListener("change", schedule);
  run();
}

start();
