// Sortable tables, metric-group tabs and the release picker. No model text passes through here.
(function () {
  "use strict";
  function key(cell, numeric) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent.trim();
    if (!numeric) return raw.toLowerCase();
    var n = parseFloat(raw);
    return isNaN(n) ? null : n;
  }
  function sortBy(table, th) {
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");  // numbers sort highest first, unless data-first="ascending" (ranks)
    var descending = current ? current !== "descending" : numeric && th.getAttribute("data-first") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index], numeric), y = key(b.cells[index], numeric);
      if (x === null && y === null) return 0;
      if (x === null) return 1;   // blanks last either way
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.tHead.querySelectorAll("th").forEach(function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
    });
  });
  // Metric groups as tabs: without JavaScript every panel shows; with it, one at a time.
  var tabs = Array.prototype.slice.call(document.querySelectorAll("#group-tabs [role=tab]"));
  function show(tab) {
    tabs.forEach(function (t) {
      var on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    });
  }
  tabs.forEach(function (t) { t.addEventListener("click", function () { show(t); }); });
  if (tabs.length) show(tabs[0]);
  var picker = document.getElementById("release-picker");
  if (picker) picker.addEventListener("change", function () { window.location.href = picker.value; });
})();
