// fundi console: keeps pages current from the server's event streams. Every fragment
// arrives rendered (and escaped) by the server; this script only puts it in place.
// Without it the pages still work: reload to see what changed.
"use strict";

(function () {
  // A task's page: `timeline` entries are appended; `status`, `actions` and `artifacts`
  // replace the block of that id; `end` closes the stream.
  const task = document.querySelector("[data-events]");
  if (task) {
    const source = new EventSource(task.dataset.events);
    source.addEventListener("timeline", (event) => {
      const timeline = document.getElementById("timeline");
      if (!document.getElementById("event-" + event.lastEventId)) {
        timeline.insertAdjacentHTML("beforeend", event.data);
      }
    });
    for (const block of ["status", "actions", "artifacts"]) {
      source.addEventListener(block, (event) => {
        const target = document.getElementById(block);
        // Leave a form alone while someone is typing in it.
        if (block === "actions" && target.contains(document.activeElement) &&
            document.activeElement.matches("input, textarea, select")) {
          return;
        }
        target.innerHTML = event.data;
      });
    }
    source.addEventListener("end", () => source.close());
  }

  // The tasks page: the count of each state.
  const counts = document.querySelector("[data-counts]");
  if (counts) {
    const source = new EventSource(counts.dataset.counts);
    source.addEventListener("counts", (event) => {
      const figures = JSON.parse(event.data);
      for (const [state, count] of Object.entries(figures)) {
        const cell = counts.querySelector('[data-count="' + state + '"]');
        if (cell) {
          cell.textContent = String(count);
        }
      }
    });
  }
})();
