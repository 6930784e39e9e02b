// Two runs of one scenario side by side, row by row. Data comes from the runs' own index.js and
// chunk-<k>.js files (loaded one at a time, since each calls the same global). Text only via textContent.
(function () {
  "use strict";
  var root = document.getElementById("compare");
  if (!root) return;
  var cfg = { chunkRows: parseInt(root.dataset.chunkRows, 10), pageSize: parseInt(root.dataset.pageSize, 10),
              correctAt: parseFloat(root.dataset.correctAt) };
  var form = document.getElementById("pick"), list = document.getElementById("pairs");
  var info = document.getElementById("page-info"), summary = document.getElementById("summary");
  var state = { page: 0, rows: [], a: null, b: null }, loaded = {}, queue = Promise.resolve(), received;
  window.helmflowIndex = function (data) { received = data; };
  window.helmflowChunk = function (k, rows) { received = rows; };

  function load(src) {  // serialised: one data script at a time, each result captured right after it ran
    if (!loaded[src]) {
      loaded[src] = queue = queue.then(function () {
        return new Promise(function (resolve, reject) {
          var s = document.createElement("script");
          received = undefined;
          s.src = src;
          s.onload = function () { s.remove(); resolve(received); };
          s.onerror = function () { s.remove(); reject(new Error("could not load " + src)); };
          document.head.appendChild(s);
        });
      });
    }
    return loaded[src];
  }
  function runFile(run, name) { return "../runs/" + run + "/" + name; }
  function row(run, n) {
    return load(runFile(run, "chunk-" + Math.floor(n / cfg.chunkRows) + ".js")).then(function (rows) { return rows[n % cfg.chunkRows]; });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function correct(score) { return score !== null && score >= cfg.correctAt; }
  function label(select) { return select.options[select.selectedIndex].textContent; }

  function syncModels() {  // offer only the chosen scenario's runs; A and B default to its first two
    var scenario = form.elements.scenario.value;
    ["a", "b"].forEach(function (n, i) {
      var sel = form.elements[n], visible = [];
      Array.prototype.forEach.call(sel.options, function (o) {
        o.hidden = o.dataset.scenario !== scenario;
        if (!o.hidden) visible.push(o.value);
      });
      if (visible.length && visible.indexOf(sel.value) < 0) sel.value = visible[Math.min(i, visible.length - 1)];
      if (i === 1 && sel.value === form.elements.a.value && visible.length > 1) {
        sel.value = visible.filter(function (v) { return v !== form.elements.a.value; })[0];
      }
    });
  }
  function side(cell, r, name) {
    cell.appendChild(el("div", "label", name));
    var v = r.error ? ["error", "badge-error"] : r.score === null ? ["no score", ""] :
            correct(r.score) ? ["correct", "badge-correct"] : ["incorrect", "badge-incorrect"];
    cell.appendChild(el("span", "badge verdict " + v[1], v[0]));
    var answer = el("pre", "completion", r.completion === undefined ? "text withheld: ids and scores only" : r.completion);
    answer.dir = "auto";  // text in any script: its own first strong character sets its direction
    cell.appendChild(answer);
  }
  function render(n, ra, rb) {
    var li = el("li", "instance pair");
    li.dataset.row = n;
    var h = el("h3");
    h.appendChild(el("span", "muted", "#" + n));
    h.appendChild(el("span", "instance-id", ra.instance_id));
    if (ra.instance_id !== rb.instance_id) h.appendChild(el("span", "badge badge-error", "rows differ: " + rb.instance_id));
    li.appendChild(h);
    if (ra.prompt !== undefined) {
      var d = el("details"); d.appendChild(el("summary", "", "prompt and references"));
      var prompt = el("pre", "prompt", ra.prompt);
      prompt.dir = "auto";
      d.appendChild(prompt);
      (ra.references || []).forEach(function (ref) { d.appendChild(el("div", ref.correct ? "correct" : "", (ref.correct ? "✓ " : "") + ref.text)); });
      li.appendChild(d);
    }
    var grid = el("div", "parts"), left = el("div", "side-a"), right = el("div", "side-b");
    side(left, ra, "A: " + label(form.elements.a)); side(right, rb, "B: " + label(form.elements.b));
    grid.appendChild(left); grid.appendChild(right); li.appendChild(grid);
    return li;
  }
  function show() {
    var pages = Math.max(1, Math.ceil(state.rows.length / cfg.pageSize));
    state.page = Math.min(Math.max(state.page, 0), pages - 1);
    var wanted = state.rows.slice(state.page * cfg.pageSize, (state.page + 1) * cfg.pageSize);
    root.dataset.state = "loading";
    return Promise.all(wanted.map(function (n) {
      return Promise.all([row(state.a, n), row(state.b, n)]).then(function (p) { return render(n, p[0], p[1]); });
    })).then(function (items) {
      list.replaceChildren.apply(list, items);
      info.textContent = state.rows.length ? "rows " + (state.page * cfg.pageSize + 1) + "–" + (state.page * cfg.pageSize + wanted.length) +
        " of " + state.rows.length + " · page " + (state.page + 1) + " / " + pages : "no row matches";
      root.dataset.state = "ready";
    });
  }
  function signed(x) { return (x >= 0 ? "+" : "") + x.toFixed(3); }
  function syncPaired() {  // highlight the picked pair's row and say its difference as A − B
    var a = label(form.elements.a), b = label(form.elements.b), sc = form.elements.scenario.value, text = "";
    document.querySelectorAll("#paired tbody tr").forEach(function (tr) {
      var same = tr.dataset.a === a && tr.dataset.b === b, swapped = tr.dataset.a === b && tr.dataset.b === a;
      var match = tr.dataset.scenario === sc && (same || swapped);
      tr.classList.toggle("current", match);
      if (!match) return;
      var k = same ? 1 : -1, d = k * parseFloat(tr.dataset.delta);
      var lo = k * parseFloat(same ? tr.dataset.low : tr.dataset.high), hi = k * parseFloat(same ? tr.dataset.high : tr.dataset.low);
      text = sc + ": A − B = " + signed(d) + " [" + signed(lo) + ", " + signed(hi) + "] (95% paired bootstrap)" +
             (tr.dataset.p !== undefined ? ", McNemar p = " + parseFloat(tr.dataset.p).toPrecision(3) : "") +
             (lo > 0 ? ": A is better" : hi < 0 ? ": B is better" : ": not separable");
    });
    document.getElementById("paired-pick").textContent = text || "no paired difference for this pick";
  }
  function refresh() {
    syncModels();
    syncPaired();
    state.a = form.elements.a.value; state.b = form.elements.b.value; state.page = 0;
    history.replaceState(null, "", "#" + new URLSearchParams({ scenario: form.elements.scenario.value, a: state.a, b: state.b,
                                                              show: form.elements.show.value }).toString());
    root.dataset.state = "loading";
    return Promise.all([load(runFile(state.a, "index.js")), load(runFile(state.b, "index.js"))]).then(function (ix) {
      var A = ix[0], B = ix[1], want = form.elements.show.value, rows = [], counts = { a: 0, b: 0, both: 0, neither: 0 };
      if (A.score.length !== B.score.length) throw new Error("these runs were sampled differently (" + A.score.length + " vs " + B.score.length + " rows)");
      for (var n = 0; n < A.score.length; n++) {
        var ca = !A.error[n] && correct(A.score[n]), cb = !B.error[n] && correct(B.score[n]);
        var kind = ca && cb ? "both" : ca ? "a" : cb ? "b" : "neither";
        counts[kind]++;
        if (!want || want === kind || (want === "disagree" && (kind === "a" || kind === "b"))) rows.push(n);
      }
      summary.textContent = "both correct " + counts.both + " · only A " + counts.a + " · only B " + counts.b + " · neither " + counts.neither;
      state.rows = rows;
      return show();
    }).catch(function (e) { info.textContent = e.message; root.dataset.state = "failed"; });
  }
  var p = new URLSearchParams(location.hash.slice(1));
  if (p.get("scenario")) form.elements.scenario.value = p.get("scenario");
  syncModels();
  ["a", "b", "show"].forEach(function (k) { if (p.get(k) !== null) form.elements[k].value = p.get(k); });
  form.addEventListener("change", refresh);
  form.addEventListener("submit", function (ev) { ev.preventDefault(); refresh(); });
  root.querySelectorAll("[data-go]").forEach(function (b) {
    b.addEventListener("click", function () { state.page += b.dataset.go === "next" ? 1 : -1; show(); });
  });
  refresh();
})();
