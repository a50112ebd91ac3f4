// The submissions table: press a header's button to sort, use the form above it to filter.
// Plain DOM, no libraries, so the report stays one file that opens from disk. The service's
// live page replaces the table as results land: it takes reportTable.state() of the old one
// and hands it to reportTable.setup(), so the new one keeps the filters and the order.
(function () {
  "use strict";
  var FILTERS = ["f-text", "f-status", "f-task", "f-timeout", "f-pending", "f-stale"];

  function setup(previous) {
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

    var sorters = {};
    headers.forEach(function (th, index) {
      if (!th.hasAttribute("data-sort")) { return; }
      // A real button in each sortable header: reached with Tab, pressed with Enter or Space,
      // and announced as a button; aria-sort on the header says the order.
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      function sort(ascending, quiet) {
        var numeric = th.getAttribute("data-sort") === "num";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        rows.sort(function (a, b) {
          var x = key(a, index, numeric), y = key(b, index, numeric);
          var order = numeric ? x - y : x.localeCompare(y);
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
        if (!quiet) {
          sortStatus.textContent = say(sortStatus.getAttribute(ascending ? "data-ascending" : "data-descending"),
                                       {column: button.textContent.replace(/\s+/g, " ").trim()});
        }
      }
      function toggle() { sort(th.getAttribute("aria-sort") !== "ascending", false); }
      sorters[index] = sort;
      button.addEventListener("click", toggle);
      th.addEventListener("click", function (event) { if (event.target === th) { toggle(); } });  // a click beside it
    });

    var inputs = FILTERS.map(function (id) { return document.getElementById(id); });
    var text = inputs[0], status = inputs[1], task = inputs[2], timeout = inputs[3], pending = inputs[4],
        stale = inputs[5], count = document.getElementById("f-count");

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
    inputs.forEach(function (input) {
      input.addEventListener("input", filter);
      input.addEventListener("change", filter);
    });
    if (previous) {
      inputs.forEach(function (input) {
        var kept = previous.filters[input.id];
        if (input.type === "checkbox") { input.checked = kept === true; } else if (typeof kept === "string") {
          input.value = kept;
          if (input.value !== kept) { input.value = ""; }  // an option the new table has no rows for
        }
      });
      if (previous.sorted !== null && sorters[previous.sorted]) { sorters[previous.sorted](previous.ascending, true); }
    }
    filter();
  }

  // The filters' values and the column sorted by (its index and order), to hand to setup().
  function state() {
    var filters = {}, sorted = null, ascending = true;
    FILTERS.forEach(function (id) {
      var input = document.getElementById(id);
      if (input) { filters[id] = input.type === "checkbox" ? input.checked : input.value; }
    });
    var table = document.getElementById("results");
    if (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        if (th.hasAttribute("aria-sort")) { sorted = index; ascending = th.getAttribute("aria-sort") === "ascending"; }
      });
    }
    return {filters: filters, sorted: sorted, ascending: ascending};
  }

  window.reportTable = {setup: setup, state: state};
  setup(null);
})();
