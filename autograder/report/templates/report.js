// The submissions table: press a header's button to sort, use the form above it to filter.
// Plain DOM, no libraries, so the report stays one file that opens from disk.
(function () {
  "use strict";
  var table = document.getElementById("results");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function key(row, index, numeric) {
    var cell = row.cells[index];
    var value = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent;
    return numeric ? parseFloat(value) || 0 : value.trim().toLowerCase();
  }

  // Words come from the page (data-* attributes the template fills in the report's language).
  var sortStatus = document.getElementById("sort-status");
  function say(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) { return values[name]; });
  }

  headers.forEach(function (th, index) {
    if (!th.hasAttribute("data-sort")) { return; }
    // A real button in each sortable header: reached with Tab, pressed with Enter or Space,
    // and announced as a button; aria-sort on the header says the order.
    var button = document.createElement("button");
    button.type = "button";
    while (th.firstChild) { button.appendChild(th.firstChild); }
    th.appendChild(button);
    function sort() {
      var numeric = th.getAttribute("data-sort") === "num";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.sort(function (a, b) {
        var x = key(a, index, numeric), y = key(b, index, numeric);
        var order = numeric ? x - y : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
      sortStatus.textContent = say(sortStatus.getAttribute(ascending ? "data-ascending" : "data-descending"),
                                   {column: button.textContent.replace(/\s+/g, " ").trim()});
    }
    button.addEventListener("click", sort);
    th.addEventListener("click", function (event) { if (event.target === th) { sort(); } });  // a click beside it
  });

  var text = document.getElementById("f-text"), status = document.getElementById("f-status"),
      task = document.getElementById("f-task"), timeout = document.getElementById("f-timeout"),
      pending = document.getElementById("f-pending"), stale = document.getElementById("f-stale"),
      count = document.getElementById("f-count");

  function filter() {
    var needle = text.value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (row) {
      var ok = (!needle || row.cells[0].textContent.toLowerCase().indexOf(needle) >= 0)
        && (!status.value || row.getAttribute("data-status") === status.value)
        && (!task.value || (" " + row.getAttribute("data-short")).indexOf(" " + task.value + " ") >= 0)
        && (!timeout.checked || row.getAttribute("data-timeouts") !== "0")
        && (!pending.checked || row.getAttribute("data-pending") === "1")
        && (!stale.checked || row.getAttribute("data-stale") === "1");
      row.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    count.textContent = say(count.getAttribute("data-text"), {shown: shown, count: rows.length});
  }
  [text, status, task, timeout, pending, stale].forEach(function (input) {
    input.addEventListener("input", filter);
    input.addEventListener("change", filter);
  });
  filter();
})();
