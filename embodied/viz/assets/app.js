// Scene-graph viewer: draws one sampled frame of the timeline at a time.
(function () {
  const data = JSON.parse(document.getElementById("timeline").textContent);
  const frames = data.frames;
  const nodes = data.nodes;
  const slider = document.getElementById("slider");
  const graph = document.getElementById("graph");
  slider.max = frames.length - 1;
  document.getElementById("summary").textContent =
    `${Object.keys(nodes).length} nodes, ${data.events.length} events, ` +
    `${frames.length ? frames[frames.length - 1].t : 0} steps`;

  const rgb = (c, a) => `rgba(${Math.round(c[0] * 255)},${Math.round(c[1] * 255)},${Math.round(c[2] * 255)},${a})`;
  const KIND_SYMBOL = { object: "circle", container: "square", surface: "diamond", place: "cross",
                        room: "diamond-open", agent: "x" };

  function nodeTrace(frame, visible) {
    const xs = [], ys = [], zs = [], text = [], colors = [], ids = [], symbols = [];
    for (const [id, s] of Object.entries(frame.nodes)) {
      if (Boolean(s[3]) !== visible) continue;
      const info = nodes[id] || { label: id, kind: "object", rgb: [0.6, 0.6, 0.6] };
      xs.push(s[0]); ys.push(s[1]); zs.push(s[2]); ids.push(id);
      let label = info.label;
      if (s[4]) label += ` (in ${nodes[s[4]] ? nodes[s[4]].label : s[4]})`;
      else if (!visible) label += " (unseen)";
      text.push(label);
      colors.push(rgb(info.rgb, visible ? 1.0 : 0.35));
      symbols.push(visible ? (KIND_SYMBOL[info.kind] || "circle") : "circle-open");
    }
    return { type: "scatter3d", mode: "markers+text", x: xs, y: ys, z: zs, text, customdata: ids,
             name: visible ? "seen" : "unseen / contained", textposition: "top center",
             marker: { size: visible ? 7 : 6, color: colors, symbol: symbols,
                       line: { color: "#333", width: 1 } },
             hovertemplate: "%{text}<br>(%{x:.2f}, %{y:.2f}, %{z:.2f})<extra></extra>" };
  }

  function edgeTraces(frame) {
    const line = { x: [], y: [], z: [] }, mid = { x: [], y: [], z: [], text: [] };
    for (const [a, b, rel] of frame.edges) {
      const p = frame.nodes[a], q = frame.nodes[b];
      if (!p || !q) continue;
      line.x.push(p[0], q[0], null); line.y.push(p[1], q[1], null); line.z.push(p[2], q[2], null);
      mid.x.push((p[0] + q[0]) / 2); mid.y.push((p[1] + q[1]) / 2); mid.z.push((p[2] + q[2]) / 2);
      mid.text.push(rel);
    }
    return [
      { type: "scatter3d", mode: "lines", ...line, name: "relations", hoverinfo: "skip",
        line: { color: "rgba(80,80,80,0.6)", width: 3 } },
      { type: "scatter3d", mode: "text", ...mid, name: "relation labels", hoverinfo: "skip",
        textfont: { size: 10, color: "#555" } },
    ];
  }

  function pathTrace(t) {
    const pts = data.path.filter((p) => p[0] <= t);
    return { type: "scatter3d", mode: "lines", name: "robot path", hoverinfo: "skip",
             x: pts.map((p) => p[1]), y: pts.map((p) => p[2]), z: pts.map((p) => p[3]),
             line: { color: "rgba(30,120,220,0.8)", width: 4 } };
  }

  const layout = { margin: { l: 0, r: 0, t: 0, b: 0 }, uirevision: "keep", showlegend: true,
                   legend: { x: 0, y: 1 },
                   scene: { aspectmode: "data", xaxis: { title: "x (m)" }, yaxis: { title: "y (m)" },
                            zaxis: { title: "z (m)" } } };

  function nearestKeyframe(t) {
    let best = null;
    for (const k of data.keyframes) if (k.t <= t && (!best || k.t >= best.t)) best = k;
    return best || data.keyframes[0];
  }

  function showHistory(id) {
    const info = nodes[id];
    const rows = [];
    let last = null;
    for (const f of frames) {
      const s = f.nodes[id];
      if (!s) continue;
      const key = `${s[0].toFixed(2)},${s[1].toFixed(2)},${s[2].toFixed(2)},${s[3]},${s[4]}`;
      if (key !== last) rows.push(`t=${f.t}: (${s[0].toFixed(2)}, ${s[1].toFixed(2)}, ${s[2].toFixed(2)})` +
                                  (s[4] ? ` in ${s[4]}` : s[3] ? "" : " unseen"));
      last = key;
    }
    const evs = data.events.filter((e) => e.node === id).map((e) => `t=${e.t}: ${e.op} ${e.text}`);
    const el = document.getElementById("history");
    el.className = "";
    el.innerHTML = `<b>${info ? info.label : id}</b><br>` + rows.concat(evs).join("<br>");
  }

  function draw(index) {
    const frame = frames[index];
    const traces = [nodeTrace(frame, true), nodeTrace(frame, false), ...edgeTraces(frame), pathTrace(frame.t)];
    Plotly.react(graph, traces, layout, { responsive: true });
    document.getElementById("tlabel").textContent = frame.t;
    const seen = Object.values(frame.nodes).filter((s) => s[3]).length;
    document.getElementById("counts").textContent =
      `${seen} seen, ${Object.keys(frame.nodes).length - seen} unseen, ${frame.edges.length} relations`;
    graph.dataset.visibleNodes = String(seen);
    graph.dataset.frameIndex = String(index);
    const list = document.getElementById("events");
    list.innerHTML = "";
    // Only the most recent events: a long episode has thousands.
    let upto = 0;
    while (upto < data.events.length && data.events[upto].t <= frame.t) upto++;
    list.start = Math.max(1, upto - 199);
    for (const e of data.events.slice(Math.max(0, upto - 200), upto)) {
      const li = document.createElement("li");
      li.textContent = `t=${e.t} ${e.op} ${e.text}`;
      list.appendChild(li);
    }
    if (list.lastChild) list.lastChild.className = "current";
    const kf = nearestKeyframe(frame.t);
    if (kf) {
      document.getElementById("keyframe").src = "data:image/jpeg;base64," + kf.jpeg_base64;
      document.getElementById("kfinfo").textContent = `${kf.camera}, t=${kf.t}`;
    }
  }

  slider.addEventListener("input", () => draw(Number(slider.value)));
  draw(0);
  graph.on("plotly_click", (ev) => ev.points[0].customdata && showHistory(ev.points[0].customdata));
  graph.on("plotly_hover", (ev) => ev.points[0].customdata && showHistory(ev.points[0].customdata));
  document.body.dataset.ready = "1";
})();
