// The instance viewer: pages through a run's instances, loading data chunks (``chunk-<k>.js``) and the
// narrow index (``index.js``) with <script> tags, which works over HTTP and from file:// alike.
// Model text is hostile: it is only ever put into the page with textContent, never as HTML or a URL.
(function () {
  "use strict";
  var root = document.getElementById("viewer");
  if (!root) return;
  var cfg = {
    total: parseInt(root.dataset.total, 10),
    chunkRows: parseInt(root.dataset.chunkRows, 10),
    pageSize: parseInt(root.dataset.pageSize, 10),
    correctAt: parseFloat(root.dataset.correctAt),
    mainMetric: root.dataset.mainMetric,
    redacted: root.dataset.redacted === "true",
    serverSearch: root.dataset.search === "server",
    media: root.dataset.media || ""
  };
  var list = document.getElementById("instances");
  var info = document.getElementById("page-info");
  var form = document.getElementById("filters");
  var chunks = {}, waiting = {}, index = null, indexWaiting = null;
  var state = { page: 0, status: "", split: "", q: "", open: null };
  var matches = null;  // null: every row, in order; otherwise the matching row numbers

  // ---------------------------------------------------------------- loading data files
  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = function () { s.remove(); resolve(); };
      s.onerror = function () { s.remove(); reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }
  window.helmflowChunk = function (k, rows) { chunks[k] = rows; };
  window.helmflowIndex = function (data) { index = data; };
  var searched = {};
  window.helmflowSearch = function (text, rows) { searched[text] = rows; };
  function chunk(k) {
    if (chunks[k]) return Promise.resolve(chunks[k]);
    if (!waiting[k]) waiting[k] = loadScript("chunk-" + k + ".js").then(function () { return chunks[k]; });
    return waiting[k];
  }
  function loadIndex() {
    if (index) return Promise.resolve(index);
    if (!indexWaiting) indexWaiting = loadScript("index.js").then(function () { return index; });
    return indexWaiting;
  }
  function row(n) {
    return chunk(Math.floor(n / cfg.chunkRows)).then(function (rows) { return rows[n % cfg.chunkRows]; });
  }

  // ---------------------------------------------------------------- filtering
  function flagsMatch(i) {
    var score = index.score[i], error = index.error[i];
    if (state.split && index.splits[index.split[i]] !== state.split) return false;
    switch (state.status) {
      case "correct": return !error && score !== null && score >= cfg.correctAt;
      case "incorrect": return !error && score !== null && score < cfg.correctAt;
      case "error": return !!error;
      case "truncated": return !!index.prompt_truncated[i];
      case "reasoning": return !!(index.truncated_in_reasoning && index.truncated_in_reasoning[i]);
      default: return true;
    }
  }
  function textMatch(r, needle) {
    var hay = [r.instance_id, r.prompt || "", r.completion || ""];
    (r.references || []).forEach(function (ref) { hay.push(ref.text); });
    return hay.join("\n").toLowerCase().indexOf(needle) >= 0;
  }
  function computeMatches() {
    if (!state.status && !state.split && !state.q) { matches = null; return Promise.resolve(); }
    return loadIndex().then(function () {
      var rows = [];
      for (var i = 0; i < cfg.total; i++) if (flagsMatch(i)) rows.push(i);
      if (!state.q) { matches = rows; return; }
      if (cfg.serverSearch) {  // the live app searches every row on the server in one pass
        var q = state.q;
        return loadScript("search.js?q=" + encodeURIComponent(q)).then(function () {
          var hit = {};
          searched[q].forEach(function (n) { hit[n] = true; });
          matches = rows.filter(function (n) { return hit[n]; });
        });
      }
      // a static export reads the chunks that hold candidate rows, one after another
      var needle = state.q.toLowerCase(), found = [], ks = [];
      rows.forEach(function (n) { var k = Math.floor(n / cfg.chunkRows); if (ks[ks.length - 1] !== k) ks.push(k); });
      var wanted = {}; rows.forEach(function (n) { wanted[n] = true; });
      return ks.reduce(function (p, k, j) {
        return p.then(function () {
          info.textContent = "searching… " + (j + 1) + " / " + ks.length;
          return chunk(k).then(function (data) {
            data.forEach(function (r) { if (wanted[r.row] && textMatch(r, needle)) found.push(r.row); });
          });
        });
      }, Promise.resolve()).then(function () { matches = found; });
    });
  }

  // ---------------------------------------------------------------- rendering (textContent only)
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // text a model or a dataset wrote, in any script: its direction comes from its own first strong character
  // (dir="auto"), so Arabic reads right to left and English left to right, each line on its own (style.css)
  function textEl(tag, cls, text) {
    var e = el(tag, cls, text);
    e.dir = "auto";
    return e;
  }
  function fmt(v) { return v === null || v === undefined ? "—" : (Math.round(v * 10000) / 10000).toString(); }
  function verdict(r) {
    if (r.error) return ["error", "badge-error"];
    if (r.score === null || r.score === undefined) return ["no score", ""];
    return r.score >= cfg.correctAt ? ["correct", "badge-correct"] : ["incorrect", "badge-incorrect"];
  }
  // an image part becomes a thumbnail only when its uri is a content key (media/<sha256>.<ext>) named by
  // its own sha256: stored data is untrusted, so nothing else ever reaches an img src
  var MEDIA_KEY = /^media\/([0-9a-f]{64})\.(png|jpg|gif|webp)$/;
  function thumb(part) {
    var m = MEDIA_KEY.exec((part && part.uri) || "");
    if (!m || m[1] !== part.sha256) return el("span", "muted", "[image not shown]");
    var img = el("img", "thumb");
    img.src = cfg.media + m[1] + "." + m[2];
    img.alt = "image " + m[1].slice(0, 12);
    img.loading = "lazy";
    return img;
  }
  function partsBlock(parent, label, parts) {  // text and images in the order they were sent
    parent.appendChild(el("div", "label", label));
    // one box for the whole prompt, its text and images inline in it: a text part is not a box of its own
    // (an option image between two line breaks would sit beside an empty one)
    var box = textEl("div", "prompt parts-prompt");
    parts.forEach(function (p) {
      if (p.type !== "text") box.appendChild(thumb(p));
      else if (p.text) box.appendChild(textEl("span", "part-text", p.text));
    });
    parent.appendChild(box);
  }
  // an image-to-structure completion (LaTeX, a web page, a music sheet): the image the model was shown, what
  // its answer renders to (from the media store) and the answer itself, side by side
  function structure(r) {
    var box = el("div", "structure");
    var shown = ((r.request && r.request.parts) || []).filter(function (p) { return p.type === "image"; })[0];
    var d = r.render, drawn;
    if (d.compiled && d.image) drawn = thumb(d.image);
    else drawn = el("pre", "error-text render-error", "did not compile" + (d.error ? ": " + d.error : ""));
    [["image", shown ? thumb(shown) : el("span", "muted", "[no image]"), "structure-image"],
     ["rendered · " + d.renderer + " " + d.renderer_version + (d.reused ? " · from the render cache" : "") +
      " · " + fmt(d.seconds) + " s", drawn, "structure-render"],
     ["source", el("pre", "completion", r.completion), "structure-source"]].forEach(function (c) {
      var fig = el("figure", c[2]);
      fig.appendChild(el("div", "label", c[0]));
      fig.appendChild(c[1]);
      box.appendChild(fig);
    });
    return box;
  }
  function block(parent, label, text, cls) {
    parent.appendChild(el("div", "label", label));
    parent.appendChild(textEl("pre", cls, text));
  }
  var SHOWN = ["judge", "template", "template_version", "score", "raw_output", "error", "prompt"];
  function annotation(a) {  // one judge's verdict: who, which template, the score, its reasoning
    var box = el("div", "annotation");
    var head = ["judge" + (a.judge ? " " + a.judge : "")];
    if (a.template) head.push(a.template + (a.template_version ? "@" + a.template_version : ""));
    head.push("score " + fmt(a.score));
    box.appendChild(el("div", "label", head.join(" · ")));
    if (a.raw_output !== undefined && a.raw_output !== null) box.appendChild(textEl("pre", "judge-output", a.raw_output));
    if (a.error) box.appendChild(el("pre", "error-text", a.error));
    var t = el("table", "stats");
    Object.keys(a).forEach(function (k) {
      if (SHOWN.indexOf(k) >= 0 || a[k] === null || a[k] === "" || a[k] === "{}") return;
      var tr = el("tr"); tr.appendChild(el("td", "", k));
      tr.appendChild(el("td", "", typeof a[k] === "number" ? fmt(a[k]) : a[k])); t.appendChild(tr);
    });
    box.appendChild(t);
    if (a.prompt) {
      var d = el("details"); d.appendChild(el("summary", "", "judge prompt")); d.appendChild(textEl("pre", "", a.prompt));
      box.appendChild(d);
    }
    return box;
  }
  function render(r) {
    var li = el("li", "instance");
    li.id = "row-" + r.row;
    li.dataset.row = r.row;
    var h = el("h3");
    h.appendChild(el("span", "muted", "#" + r.row));
    h.appendChild(el("span", "instance-id", r.instance_id));
    h.appendChild(el("span", "muted", r.split + (r.sample_index ? " · sample " + r.sample_index : "")));
    var v = verdict(r);
    h.appendChild(el("span", "badge verdict " + v[1], v[0]));
    if (r.truncated) h.appendChild(el("span", "badge badge-truncated", "truncated"));
    if (r.truncated_in_reasoning) h.appendChild(el("span", "badge badge-truncated badge-reasoning", "truncated in reasoning"));
    h.appendChild(el("span", "muted", cfg.mainMetric + " " + fmt(r.score)));
    li.appendChild(h);
    if (!cfg.redacted && r.render) li.appendChild(structure(r));
    var parts = el("div", "parts"), left = el("div"), right = el("div");
    if (cfg.redacted) {
      left.appendChild(el("p", "muted", "text withheld: ids and scores only"));
    } else {
      var examples = " (" + r.num_train_instances + " in-context examples)";
      if (r.request && r.request.messages) {  // a chat: one block per message, as sent
        r.request.messages.forEach(function (m, j) {
          block(left, m.role + (j === 0 ? examples : ""), m.content, "message message-" + m.role);
        });
      } else if (r.request && r.request.parts) {
        partsBlock(left, "prompt" + examples, r.request.parts);
      } else {
        block(left, "prompt" + examples, r.prompt, "prompt");
      }
      (r.notes || []).forEach(function (n) { left.appendChild(el("p", "muted request-note", n)); });
      if (r.images && r.images.length) {  // a text-to-image completion: its images as a grid, the metrics under it
        left.appendChild(el("div", "label", "generated images (" + r.images.length + ")"));
        var grid = el("div", "image-grid");
        r.images.forEach(function (p, j) {
          var fig = el("figure", "generated");
          fig.appendChild(thumb(p));
          fig.appendChild(el("figcaption", "muted", "image " + (j + 1)));
          grid.appendChild(fig);
        });
        left.appendChild(grid);
        var under = el("table", "stats image-metrics");
        Object.keys(r.stats || {}).sort().forEach(function (name) {
          var tr = el("tr"); tr.appendChild(el("td", "", name)); tr.appendChild(el("td", "", fmt(r.stats[name])));
          under.appendChild(tr);
        });
        left.appendChild(under);
      } else if (!r.render) {  // a rendered answer is shown beside its render, above
        block(left, "completion", r.completion, "completion");
      }
      if (r.reasoning) {  // the model's thinking: kept apart from the scored answer, shown folded
        var think = el("details", "reasoning");
        think.appendChild(el("summary", "", "reasoning (" + r.reasoning_tokens + " tokens, not scored)"));
        think.appendChild(textEl("pre", "reasoning-text", r.reasoning));
        left.appendChild(think);
      }
      if (r.error) block(left, "error", r.error, "error-text");
      right.appendChild(el("div", "label", "references"));
      var ul = el("ul", "refs");
      (r.references || []).forEach(function (ref) {
        var li = textEl("li", ref.correct ? "correct" : "", (ref.correct ? "✓ " : "") + ref.text);
        if (ref.image) li.appendChild(thumb(ref.image));
        ul.appendChild(li);
      });
      right.appendChild(ul);
    }
    right.appendChild(el("div", "label", "stats"));
    var t = el("table", "stats");
    Object.keys(r.stats || {}).sort().forEach(function (name) {
      var tr = el("tr"); tr.appendChild(el("td", "", name)); tr.appendChild(el("td", "", fmt(r.stats[name]))); t.appendChild(tr);
    });
    right.appendChild(t);
    (r.annotations || []).forEach(function (a) { right.appendChild(annotation(a)); });
    parts.appendChild(left); parts.appendChild(right); li.appendChild(parts);
    if (!cfg.redacted) {
      var d = el("details", "raw");
      d.appendChild(el("summary", "", "exact request and raw response"));
      block(d, "request", JSON.stringify(r.request, null, 2), "request");
      block(d, "response", JSON.stringify(r.response, null, 2), "response");
      d.open = state.open === r.row;
      d.addEventListener("toggle", function () {
        if (d.open) { state.open = r.row; writeHash(); }
      });
      li.appendChild(d);
    }
    return li;
  }

  function show() {
    var count = matches === null ? cfg.total : matches.length;
    var pages = Math.max(1, Math.ceil(count / cfg.pageSize));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * cfg.pageSize, stop = Math.min(start + cfg.pageSize, count), wanted = [];
    for (var i = start; i < stop; i++) wanted.push(matches === null ? i : matches[i]);
    info.textContent = "loading…";
    return Promise.all(wanted.map(row)).then(function (rows) {
      list.replaceChildren.apply(list, rows.map(render));
      info.textContent = count ? "instances " + (start + 1) + "–" + stop + " of " + count + " · page " + (state.page + 1) + " / " + pages
                               : "no instance matches";
      root.dataset.state = "ready";
      if (state.open !== null) {
        var target = document.getElementById("row-" + state.open);
        if (target) target.scrollIntoView();
      }
    });
  }

  // ---------------------------------------------------------------- state in the URL hash
  function writeHash() {
    var p = new URLSearchParams();
    ["status", "split", "q"].forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    if (state.page) p.set("page", state.page + 1);
    if (state.open !== null) p.set("open", state.open);
    history.replaceState(null, "", "#" + p.toString());
  }
  function readHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    state.status = p.get("status") || ""; state.split = p.get("split") || ""; state.q = p.get("q") || "";
    state.page = Math.max(0, (parseInt(p.get("page"), 10) || 1) - 1);
    state.open = p.has("open") ? parseInt(p.get("open"), 10) : null;
    form.elements.status.value = state.status;
    form.elements.split.value = state.split;
    if (form.elements.q) form.elements.q.value = state.q;
  }
  function refresh() {
    root.dataset.state = "loading";
    return computeMatches().then(show).catch(function (e) {
      info.textContent = e.message; root.dataset.state = "failed";
    });
  }
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    state.status = form.elements.status.value; state.split = form.elements.split.value;
    state.q = form.elements.q ? form.elements.q.value.trim() : "";
    state.page = 0; state.open = null; writeHash(); refresh();
  });
  ["status", "split"].forEach(function (n) {
    form.elements[n].addEventListener("change", function () { form.requestSubmit(); });
  });
  root.querySelectorAll("[data-go]").forEach(function (b) {
    b.addEventListener("click", function () {
      state.page += b.dataset.go === "next" ? 1 : -1;
      if (state.page < 0) state.page = 0;
      state.open = null; writeHash(); root.dataset.state = "loading"; show();
    });
  });
  readHash();
  refresh();
})();
