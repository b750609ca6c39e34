// copier console: live regions, countdowns, confirmations. Plain JavaScript, no libraries.
(function () {
  "use strict";

  // Countdowns: <span data-countdown="12.3"> counts down from the server's value (not
  // below data-floor when set; lease countdowns go negative once a lease has expired).
  function startCountdowns(root) {
    var now = performance.now();
    root.querySelectorAll("[data-countdown]").forEach(function (el) {
      var v = parseFloat(el.getAttribute("data-countdown"));
      if (!isFinite(v)) return;
      el.dataset.base = String(v);
      el.dataset.t0 = String(now);
    });
  }
  function tickCountdowns() {
    var now = performance.now();
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      if (el.dataset.base === undefined) return;
      var left = parseFloat(el.dataset.base) - (now - parseFloat(el.dataset.t0)) / 1000;
      if (el.hasAttribute("data-floor")) left = Math.max(left, parseFloat(el.getAttribute("data-floor")));
      el.textContent = left.toFixed(1) + " s";
      el.classList.toggle("expired", left <= 0);
    });
  }

  // Live regions: <div data-live="name" data-every="ms"> is re-rendered by the server
  // (same URL, header X-Copier-Partial: name) and swapped in place.
  function refresh(el) {
    if (document.hidden || el.dataset.busy === "1") return;
    // Do not replace a region the user is typing in.
    if (el.contains(document.activeElement) && /INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) return;
    el.dataset.busy = "1";
    fetch(window.location.href, { headers: { "X-Copier-Partial": el.getAttribute("data-live") }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 401) { window.location.reload(); return null; }
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        if (html === null) return;
        el.innerHTML = html;
        el.removeAttribute("data-stale");
        startCountdowns(el);
        tickCountdowns();
      })
      .catch(function () { el.setAttribute("data-stale", "1"); })
      .finally(function () { el.dataset.busy = "0"; });
  }

  function init() {
    startCountdowns(document);
    tickCountdowns();
    setInterval(tickCountdowns, 200);
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var every = parseInt(el.getAttribute("data-every") || "3000", 10);
      setInterval(function () { refresh(el); }, Math.max(every, 500));
    });
    // Forms that ask before they act.
    document.addEventListener("submit", function (ev) {
      var f = ev.target;
      var msg = f.getAttribute && f.getAttribute("data-confirm");
      if (msg && !window.confirm(msg)) ev.preventDefault();
    });
    // Filters apply as soon as a choice changes.
    document.querySelectorAll("form[data-autosubmit]").forEach(function (f) {
      f.querySelectorAll("select, input[type=checkbox]").forEach(function (el) {
        el.addEventListener("change", function () {
          var page = f.querySelector("input[name=page]");
          if (page) page.value = "1";
          f.requestSubmit ? f.requestSubmit() : f.submit();
        });
      });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
