// The page reads without this script: every step's state is in the page,
// and every band of the diagram links to it. The script adds a panel that
// shows a step's state beside the diagram when the step is clicked (in the
// diagram, the scenario, or the first divergence), and the arrow keys move
// from step to step.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  var ids = [];
  document.querySelectorAll("section.state").forEach(function (s) { ids.push(s.id); });
  var current = -1;
  function select(id) {
    var i = ids.indexOf(id);
    if (i < 0) { return; }
    current = i;
    document.querySelectorAll(".selected").forEach(function (el) { el.classList.remove("selected"); });
    document.querySelectorAll('[data-step="' + id + '"], [data-band="' + id + '"]').forEach(function (el) { el.classList.add("selected"); });
    var state = document.getElementById(id);
    panel.innerHTML = '<button class="close" type="button" aria-label="close">\u00d7</button>' + state.innerHTML;
    panel.querySelector(".close").addEventListener("click", function () { panel.hidden = true; });
    panel.hidden = false;
    panel.setAttribute("data-showing", id);
    if (history.replaceState) { history.replaceState(null, "", "#" + id); }
  }
  document.querySelectorAll("[data-step]").forEach(function (el) {
    el.addEventListener("click", function (e) {
      e.preventDefault();
      select(el.getAttribute("data-step"));
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { panel.hidden = true; return; }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp" || ids.length === 0 || panel.hidden) { return; }
    e.preventDefault();
    var next = current + (e.key === "ArrowDown" ? 1 : -1);
    select(ids[Math.max(0, Math.min(ids.length - 1, next))]);
  });
  if (location.hash.length > 1 && ids.indexOf(location.hash.slice(1)) >= 0) { select(location.hash.slice(1)); }
})();
