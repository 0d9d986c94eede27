// Scene-graph viewer: draws one sampled frame (slider stop) of the timeline at a time.
// Trace order is fixed (tests and the benchmark read traces by name): seen, unseen / contained,
// relations, relation labels, robot path, robot, history (+ extent, axes in the projected view),
// skill target (last: the running skill call's target node, empty when there is none or it is not drawn).
// Node traces carry customdata [id, x, y, z] with world coordinates (m) whatever the view.
(function () {
  const data = JSON.parse(document.getElementById("timeline").textContent);
  const frames = data.frames, nodes = data.nodes, events = data.events;
  const slider = document.getElementById("slider");
  const graph = document.getElementById("graph");
  const $ = (id) => document.getElementById(id);
  slider.max = Math.max(0, frames.length - 1);
  const info = data.info || {};
  $("summary").textContent =
    `${Object.keys(nodes).length} nodes, ${info.events_total ?? events.length} events` +
    (info.events_shown != null && info.events_shown < info.events_total ? ` (last ${info.events_shown} listed)` : "") +
    `, ${info.steps ?? (frames.length ? frames[frames.length - 1].t : 0)} steps, ${frames.length} stops` +
    (info.complete === false ? ", interrupted" : "") +
    (info.success != null ? (info.success ? ", success" : ", failure") : "");

  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const rgba = (c, a) => `rgba(${Math.round(c[0] * 255)},${Math.round(c[1] * 255)},${Math.round(c[2] * 255)},${a})`;
  const KIND_SYMBOL = { object: "circle", container: "square", articulated: "diamond", surface: "square",
                        place: "cross", room: "diamond", agent: "x" };
  const KIND_SIZE = { object: 7, container: 8, articulated: 7, surface: 9, place: 3, room: 10, agent: 6 };
  const infoOf = (id) => nodes[id] || { label: id, kind: "object", rgb: [0.6, 0.6, 0.6] };

  // Fixed extent over the whole episode, so the view does not jump as the slider moves.
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  const grow = (p) => { for (let i = 0; i < 3; i++) { lo[i] = Math.min(lo[i], p[i]); hi[i] = Math.max(hi[i], p[i]); } };
  for (const f of frames) for (const s of Object.values(f.nodes)) grow(s);
  for (const p of data.path) grow(p.slice(1));
  if (!isFinite(lo[0])) { lo.fill(0); hi.fill(1); }
  const centre = lo.map((l, i) => (l + hi[i]) / 2);
  const radius = Math.max(0.1, 0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]));

  // The default view: the scene projected (orthographically) by our own orbit camera onto plain
  // 2D scatter traces. They belong to plotly's core, so the page is usable before any WebGL
  // module is initialised; drag orbits, the wheel zooms. "WebGL 3D" switches to scatter3d.
  const cam = { az: -2.2, el: 0.55, zoom: 1.0 };
  let webgl = false;
  function projector() {
    const ca = Math.cos(cam.az), sa = Math.sin(cam.az), ce = Math.cos(cam.el), se = Math.sin(cam.el);
    // Right and up vectors of a camera looking at the centre from azimuth az, elevation el.
    const r = [-sa, ca, 0], u = [-se * ca, -se * sa, ce];
    return (p) => {
      const d = [p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]];
      return [d[0] * r[0] + d[1] * r[1], d[0] * u[0] + d[1] * u[1] + d[2] * u[2]];
    };
  }
  const xyz = (p) => [p[0], p[1], p[2]];
  function points(list, proj) { // list of [x, y, z] (null: a break in a line) -> trace coordinates
    const out = { x: [], y: [], z: [] };
    for (const p of list) {
      if (!p) { out.x.push(null); out.y.push(null); out.z.push(null); continue; }
      if (webgl) { out.x.push(p[0]); out.y.push(p[1]); out.z.push(p[2]); }
      else { const q = proj(p); out.x.push(q[0]); out.y.push(q[1]); }
    }
    return out;
  }
  function trace(kind, fields) {
    if (webgl) return { type: "scatter3d", ...fields };
    const t = { type: "scatter", cliponaxis: false, ...fields };
    delete t.z;
    if (kind === "markers" && t.marker && t.marker.size) t.marker = { ...t.marker, size: t.marker.size.map ? t.marker.size.map((s) => s * 1.4) : t.marker.size * 1.4 };
    return t;
  }

  function nodeTrace(frame, seen, proj) {
    const pts = [], text = [], hover = [], color = [], ids = [], symbol = [], size = [];
    for (const [id, s] of Object.entries(frame.nodes)) {
      const info = infoOf(id);
      if (info.kind === "agent") continue; // drawn as the robot marker
      const shown = Boolean(s[3]) && !s[4];
      if (shown !== seen) continue;
      const where = s[4] ? ` (in ${infoOf(s[4]).label})` : seen ? "" : ` (${s[5] || "unseen"})`;
      pts.push(xyz(s)); ids.push([id, s[0], s[1], s[2]]);
      text.push(info.kind === "place" ? "" : info.label + where);
      hover.push(`${esc(info.label)} [${id}]${where}<br>(${s[0].toFixed(2)}, ${s[1].toFixed(2)}, ${s[2].toFixed(2)}) m`);
      color.push(seen ? rgba(info.rgb, 1.0) : rgba(info.rgb, 0.3));
      symbol.push(seen ? KIND_SYMBOL[info.kind] || "circle" : (KIND_SYMBOL[info.kind] || "circle") + "-open");
      size.push(KIND_SIZE[info.kind] || 7);
    }
    return trace("markers", { mode: "markers+text", ...points(pts, proj), text, customdata: ids, hovertext: hover,
      name: seen ? "seen" : "unseen / contained", textposition: "top center",
      textfont: { size: 10, color: seen ? "#222" : "#999" },
      marker: { size, color, symbol, line: { color: seen ? "#333" : "#888", width: 1 } },
      hovertemplate: "%{hovertext}<extra></extra>" });
  }

  function edgeTraces(frame, proj) {
    const line = [], mid = [], text = [];
    for (const [a, b, rel] of frame.edges) {
      const p = frame.nodes[a], q = frame.nodes[b];
      if (!p || !q) continue;
      line.push(xyz(p), xyz(q), null);
      if (rel === "connects") continue; // the place graph: lines only, a label on each would be noise
      mid.push([(p[0] + q[0]) / 2, (p[1] + q[1]) / 2, (p[2] + q[2]) / 2]);
      text.push(rel);
    }
    return [
      trace("lines", { mode: "lines", ...points(line, proj), name: "relations", hoverinfo: "skip",
        line: { color: "rgba(80,80,80,0.55)", width: webgl ? 3 : 1.5 } }),
      trace("text", { mode: "text", ...points(mid, proj), text, name: "relation labels", hoverinfo: "skip",
        textfont: { size: 9, color: "#a05a00" } }),
    ];
  }

  function upto(list, t, key) { // number of leading entries with time <= t (binary search)
    let a = 0, b = list.length;
    while (a < b) { const m = (a + b) >> 1; if (key(list[m]) <= t) a = m + 1; else b = m; }
    return a;
  }

  function robotTraces(frame, proj) {
    const pts = data.path.slice(0, upto(data.path, frame.t, (p) => p[0])).map((p) => p.slice(1));
    const now = frame.nodes.agent || (pts.length ? pts[pts.length - 1] : null);
    return [
      trace("lines", { mode: "lines", ...points(pts, proj), name: "robot path", hoverinfo: "skip",
        line: { color: "rgba(30,120,220,0.8)", width: webgl ? 4 : 2 } }),
      trace("markers", { mode: "markers", ...points(now ? [xyz(now)] : [], proj), name: "robot",
        hovertemplate: "robot<extra></extra>", marker: { size: 8, color: "rgb(30,120,220)", symbol: "diamond" } }),
    ];
  }

  function frameTrace(proj) { // the episode's box and x/y/z arrows, for orientation in the projected view
    const [a, b] = [lo, hi];
    const c = (i, j, k) => [i ? b[0] : a[0], j ? b[1] : a[1], k ? b[2] : a[2]];
    const box = [c(0,0,0), c(1,0,0), c(1,1,0), c(0,1,0), c(0,0,0), null, c(0,0,1), c(1,0,1), c(1,1,1), c(0,1,1), c(0,0,1),
                 null, c(1,0,0), c(1,0,1), null, c(1,1,0), c(1,1,1), null, c(0,1,0), c(0,1,1)];
    const ends = [[a[0] + radius * 0.3, a[1], a[2]], [a[0], a[1] + radius * 0.3, a[2]], [a[0], a[1], a[2] + radius * 0.3]];
    return [
      trace("lines", { mode: "lines", ...points(box, proj), name: "extent", hoverinfo: "skip", showlegend: false,
        line: { color: "rgba(0,0,0,0.12)", width: 1 } }),
      trace("text", { mode: "lines+text", ...points([a, ends[0], null, a, ends[1], null, a, ends[2]], proj),
        text: ["", "x", "", "", "y", "", "", "z"], name: "axes", hoverinfo: "skip", showlegend: false,
        textfont: { size: 11, color: "#c33" }, line: { color: "rgba(200,50,50,0.6)", width: 1.5 } }),
    ];
  }

  function layoutNow() {
    const base = { margin: { l: 0, r: 0, t: 0, b: 0 }, uirevision: "keep", showlegend: true, legend: { x: 0, y: 1 },
                   hovermode: "closest" };
    if (webgl) {
      const span = hi.map((h, i) => h - lo[i] + 0.1), big = Math.max(...span);
      const axis = (i, name) => ({ title: name, range: [lo[i] - 0.05, hi[i] + 0.05], autorange: false });
      return { ...base, scene: { xaxis: axis(0, "x (m)"), yaxis: axis(1, "y (m)"), zaxis: axis(2, "z (m)"),
        aspectmode: "manual", aspectratio: { x: span[0] / big, y: span[1] / big, z: Math.max(0.25, span[2] / big) } } };
    }
    const r = radius * 1.15 / cam.zoom;
    return { ...base, dragmode: false, plot_bgcolor: "#fbfbfd",
      xaxis: { visible: false, range: [-r * 1.4, r * 1.4], fixedrange: true },
      yaxis: { visible: false, range: [-r, r], fixedrange: true, scaleanchor: "x" } };
  }

  let selected = null;
  function selectedTrace(proj) { // where the clicked object was at every stop
    const pts = [];
    if (selected) for (const f of frames) { const s = f.nodes[selected]; if (s) pts.push(xyz(s)); }
    return trace("lines", { mode: "lines+markers", ...points(pts, proj), hoverinfo: "skip",
      name: selected ? `history: ${infoOf(selected).label}` : "history",
      line: { color: "rgba(220,40,120,0.8)", width: 2, dash: "dot" }, marker: { size: 3, color: "rgb(220,40,120)" } });
  }

  let byNode = null; // node -> indices of its events, built on the first look-up
  function showHistory(id) {
    if (!byNode) {
      byNode = {};
      events.forEach((e, i) => { (byNode[e[2]] = byNode[e[2]] || []).push(i); });
    }
    if (id !== selected) { selected = id; draw(current); }
    const t = frames[current].t;
    const rows = (byNode[id] || []).map((i) => events[i])
      .map((e) => `<span${e[0] > t ? ' class="muted"' : ""}>t=${e[0]} ${esc(e[1])} ${esc(e[3])}</span>`);
    const el = $("history");
    el.className = "";
    el.innerHTML = `<b>${esc(infoOf(id).label)}</b> <span class="muted">[${esc(id)}] ${rows.length} events; ` +
      `later ones greyed</span><br>` + (rows.join("<br>") || "no logged events");
  }

  // Keyframes per camera, sorted by time; the one nearest the moment is shown.
  const cams = {};
  for (const k of data.keyframes) (cams[k.camera] = cams[k.camera] || []).push(k);
  for (const list of Object.values(cams)) list.sort((a, b) => a.t - b.t);
  const kfEls = {};
  if (data.keyframes.length) {
    const box = $("keyframes");
    box.className = ""; box.textContent = "";
    for (const cam of Object.keys(cams)) {
      const fig = document.createElement("figure");
      const img = document.createElement("img"), cap = document.createElement("figcaption");
      img.alt = `camera ${cam}`;
      fig.append(img, cap); box.appendChild(fig);
      kfEls[cam] = { img, cap, shown: null };
    }
  }
  function showKeyframes(t) {
    for (const [cam, list] of Object.entries(cams)) {
      const i = upto(list, t, (k) => k.t);
      let k = list[Math.max(0, i - 1)];
      if (i < list.length && (i === 0 || list[i].t - t < t - k.t)) k = list[i];
      const el = kfEls[cam];
      if (el.shown !== k) { el.img.src = "data:image/jpeg;base64," + k.jpeg_base64; el.shown = k; }
      el.cap.textContent = `${cam}, t=${k.t}`;
    }
  }

  function showEvents(t) {
    const list = $("events");
    const n = upto(events, t, (e) => e[0]);
    const first = Math.max(0, n - 200); // only the most recent: a long episode has thousands
    list.textContent = "";
    list.start = first + 1;
    const frag = document.createDocumentFragment();
    for (let i = first; i < n; i++) {
      const li = document.createElement("li");
      const e = events[i];
      li.textContent = `t=${e[0]} ${e[1]} ${e[2]}: ${e[3]}`;
      frag.appendChild(li);
    }
    list.appendChild(frag);
    if (list.lastChild) { list.lastChild.className = "current"; list.scrollTop = list.scrollHeight; }
    $("evcount").textContent = `(${n})`;
  }

  // The plan panel (data.plan: see embodied/viz/build.py plan_data): the latest plan/replan at or
  // before the moment, its calls numbered, the running one highlighted and those before it done.
  const plan = data.plan;
  function planState(t) {
    const nLog = upto(plan.log, t, (e) => e[0]);
    const pi = upto(plan.plans, t, (p) => p[0]) - 1, ti = upto(plan.trace, t, (e) => e[0]) - 1;
    const running = ti >= 0 && plan.trace[ti][1] ? plan.trace[ti] : null; // [t, skill, target, text, key]
    const version = pi >= 0 ? plan.plans[pi] : null; // [t, tag, goal, items [text, key, done], log index]
    const items = version ? version[3] : [];
    let done = items.filter((it) => it[2]).length, run = -1;
    const marked = done;
    if (version) for (let i = version[4] + 1; i < nLog; i++) if (plan.log[i][1] === "skill_done") done++;
    if (running) { // calls run in plan order: the running one is the first match not yet done
      const find = (from) => { for (let i = from; i < items.length; i++) if (items[i][1] === running[4]) return i; return -1; };
      run = find(Math.min(done, items.length));
      if (run < 0) run = find(marked);
      if (run >= 0) done = run;
    }
    return { nLog, version, items, done: Math.min(done, items.length), run, running };
  }
  let planEls = null;
  if (plan) {
    const box = $("plan");
    box.className = ""; box.innerHTML =
      '<div id="goal"></div><div id="skill"></div><ol id="plansteps"></ol><div id="plansource" class="muted"></div>' +
      '<ul id="outcomes"></ul>';
    planEls = { goal: $("goal"), skill: $("skill"), steps: $("plansteps"), source: $("plansource"), outcomes: $("outcomes") };
  }
  function showPlan(t, st) {
    const el = planEls, v = st.version;
    const first = plan.plans.length ? plan.plans[0][0] : null;
    el.goal.innerHTML = v ? `<b>Goal:</b> ${esc(v[2] || plan.goal || "-")}`
      : `<b>Goal:</b> <span class="muted">${plan.goal ? esc(plan.goal) + (first != null ? ` (planned at t=${first})` : "") : "-"}</span>`;
    el.skill.innerHTML = st.running ? `<b>Running:</b> <span class="call">${esc(st.running[3])}</span>`
      : `<b>Running:</b> <span class="muted">no skill (idle)</span>`;
    el.skill.dataset.skill = st.running ? st.running[3] : "";
    el.steps.textContent = "";
    st.items.forEach((it, i) => {
      const li = document.createElement("li");
      li.textContent = it[0];
      if (i === st.run) li.className = "running";
      else if (i < st.done) li.className = "done";
      el.steps.appendChild(li);
    });
    el.source.textContent = v ? `${v[1]} at t=${v[0]}, ${st.items.length} call${st.items.length === 1 ? "" : "s"}`
      : "no plan yet at this step";
    el.outcomes.textContent = "";
    for (let i = Math.max(0, st.nLog - 50); i < st.nLog; i++) {
      const [et, tag, text] = plan.log[i];
      const li = document.createElement("li");
      li.className = tag;
      li.textContent = `t=${et} ${tag}: ${text}`;
      el.outcomes.appendChild(li);
    }
    el.outcomes.scrollTop = el.outcomes.scrollHeight;
  }

  function targetTrace(frame, st, proj) { // a ring around the running call's target, if the memory drew it
    const id = st && st.running ? st.running[2] : null;
    const s = id ? frame.nodes[id] : null;
    graph.dataset.skillTarget = s ? id : "";
    return trace("markers", { mode: "markers+text", ...points(s ? [xyz(s)] : [], proj), name: "skill target",
      text: s ? [st.running[1]] : [], textposition: "bottom center", textfont: { size: 11, color: "#c60" },
      customdata: s ? [[id, s[0], s[1], s[2]]] : [], hoverinfo: "skip",
      marker: { size: 20, color: "rgb(230,130,0)", symbol: "circle-open", line: { color: "rgb(230,130,0)", width: 3 } } });
  }

  let current = 0;
  function draw(index) {
    current = index;
    const frame = frames[index];
    if (!frame) return Promise.resolve();
    const proj = projector();
    const traces = [nodeTrace(frame, true, proj), nodeTrace(frame, false, proj), ...edgeTraces(frame, proj),
                    ...robotTraces(frame, proj), selectedTrace(proj)];
    if (!webgl) traces.push(...frameTrace(proj));
    const st = plan ? planState(frame.t) : null;
    traces.push(targetTrace(frame, st, proj));
    const done = Plotly.react(graph, traces, layoutNow(), { responsive: true, displaylogo: false });
    $("tlabel").textContent = frame.t;
    const seen = traces[0].x.length, unseen = traces[1].x.length;
    $("counts").textContent = `${seen} seen, ${unseen} unseen/contained, ${frame.edges.length} relations`;
    graph.dataset.visibleNodes = String(seen);
    graph.dataset.frameIndex = String(index);
    showEvents(frame.t);
    showKeyframes(frame.t);
    if (plan) showPlan(frame.t, st);
    return done;
  }

  function setMode(gl) {
    if (gl && !webgl) {
      const lazy = Plotly.__embodiedLazy; // scatter3d, left unregistered at load (see embodied/viz/html.py)
      if (lazy && lazy.scatter3d) { Plotly.register(lazy.scatter3d()); delete lazy.scatter3d; }
    }
    webgl = gl;
    $("mode").textContent = gl ? "Projected view" : "WebGL 3D";
    graph.style.cursor = gl ? "default" : "grab";
    Plotly.purge(graph); // cartesian <-> gl3d: a fresh plot, not a diff
    return draw(current).then(wireGraph);
  }

  // Coalesce slider drags to one redraw per animation frame.
  let pending = null;
  function show(index) {
    index = Math.max(0, Math.min(frames.length - 1, Math.round(index)));
    slider.value = String(index);
    return draw(index).then(() => { graph.dataset.drawn = String(index); });
  }
  const pointId = (ev) => { const c = ev.points[0] && ev.points[0].customdata; return Array.isArray(c) ? c[0] : null; };
  function wireGraph() { // plotly's own events; re-attached after a mode switch purges the plot
    graph.on("plotly_click", (ev) => { const id = pointId(ev); if (id) showHistory(id); });
    graph.on("plotly_hover", (ev) => { const id = pointId(ev); if (id && id !== selected) showHistory(id); });
  }
  function wire() {
    slider.addEventListener("input", () => {
      if (pending === null) pending = requestAnimationFrame(() => { pending = null; show(Number(slider.value)); });
    });
    $("prev").addEventListener("click", () => show(current - 1));
    $("next").addEventListener("click", () => show(current + 1));
    $("mode").addEventListener("click", () => setMode(!webgl));
    // Orbit (drag) and zoom (wheel) for the projected view; redraws coalesce per animation frame.
    let drag = null, orbit = null;
    const redraw = () => { if (orbit === null) orbit = requestAnimationFrame(() => { orbit = null; draw(current); }); };
    graph.addEventListener("mousedown", (e) => { if (!webgl && e.button === 0) drag = [e.clientX, e.clientY]; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", (e) => {
      if (!drag || webgl) return;
      cam.az -= (e.clientX - drag[0]) * 0.008;
      cam.el = Math.max(-1.5, Math.min(1.5, cam.el + (e.clientY - drag[1]) * 0.008));
      drag = [e.clientX, e.clientY];
      redraw();
    });
    graph.addEventListener("wheel", (e) => {
      if (webgl) return;
      e.preventDefault();
      cam.zoom = Math.max(0.2, Math.min(20, cam.zoom * Math.exp(-e.deltaY * 0.001)));
      redraw();
    }, { passive: false });
    wireGraph();
    window.__viewer = { frames: frames.length, show, current: () => current, select: showHistory, setMode,
                        camera: cam };
    window.__ready_ms = performance.now(); // first plot drawn and the controls wired: interactive
    document.body.dataset.ready = "1";
  }

  if (!frames.length) {
    graph.textContent = "The recording has no memory frames yet (interrupted before the first perceived step).";
    window.__viewer = { frames: 0, show: () => Promise.resolve(), current: () => 0, select: () => {} };
    window.__ready_ms = performance.now();
    document.body.dataset.ready = "1";
  } else {
    draw(0).then(wire);
  }
})();
