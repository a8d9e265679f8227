/* Queue Depth live figures (figures/live/page.py writes their HTML and
 * JSON).
 *
 * Every .qd-live-figure on the page is drawn with Plotly from its
 * precomputed grid at once.  A figure that names a Python function
 * (data-live) becomes live on the first change of one of its controls, or a
 * click on "run live": live-worker.js loads Pyodide and the book's Python in
 * a Web Worker (one per page), and from then on each change re-runs the
 * function there and redraws.  Without Web Workers or WebAssembly, or if
 * loading fails, figures stay on the grid: values snap to the nearest
 * precomputed point, and the status line under each figure says so.
 *
 * Plain browser JavaScript: no framework, no bundler, nothing from a CDN.
 * window.qdLive exposes the state and timings (read by the browser tests).
 */
(function () {
  "use strict";

  var script = document.currentScript && document.currentScript.src;
  // This file is _static/qd/live.js; the runtime lives beside it.
  var STATIC = script ? new URL("../", script).href : "";
  var URLS = {
    pyodide: STATIC + "pyodide/",
    bundle: STATIC + "live/queue-depth-python.zip",
    worker: STATIC + "qd/live-worker.js"
  };
  var LOAD_TIMEOUT_MS = 120000;
  var PLOT_CONFIG = {responsive: true, displaylogo: false,
                     displayModeBar: false};

  var api = window.qdLive = {
    // idle | loading | ready | failed | unsupported
    state: "idle",
    reason: "",
    python: "",
    figures: [],
    timings: {firstInteraction: null, readyMs: null, firstLiveUpdateMs: null,
              workerPhasesMs: null, updates: []},
    start: start
  };

  // ------------------------------------------------------------------
  // The Python engine: one worker for the page
  // ------------------------------------------------------------------

  var worker = null;
  var nextId = 1;
  var waiting = {};
  var loadTimer = null;

  function unsupportedReason() {
    if (typeof Worker !== "function") {
      return "this browser has no Web Workers";
    }
    if (typeof WebAssembly !== "object") {
      return "this browser has no WebAssembly";
    }
    if (!STATIC) {
      return "the page could not locate the book's static files";
    }
    return "";
  }

  function start() {
    if (api.state !== "idle") {
      return;
    }
    if (api.timings.firstInteraction === null) {
      api.timings.firstInteraction = performance.now();
    }
    api.state = "loading";
    refreshAll();
    try {
      worker = new Worker(URLS.worker, {type: "module"});
    } catch (err) {
      fail("the worker could not start (" + err.message + ")");
      return;
    }
    worker.onmessage = onMessage;
    worker.onerror = function (event) {
      if (event && event.preventDefault) {
        event.preventDefault();
      }
      fail("the worker script did not load");
    };
    worker.postMessage({type: "start", pyodide: URLS.pyodide,
                        bundle: URLS.bundle});
    loadTimer = setTimeout(function () {
      if (api.state === "loading") {
        fail("Python took over " + LOAD_TIMEOUT_MS / 1000 + " s to start");
      }
    }, LOAD_TIMEOUT_MS);
  }

  function fail(reason) {
    if (api.state === "failed") {
      return;
    }
    api.state = "failed";
    api.reason = reason;
    clearTimeout(loadTimer);
    if (worker) {
      worker.terminate();
      worker = null;
    }
    waiting = {};
    if (window.console) {
      console.warn("Queue Depth live figures: " + reason +
                   "; the figures stay on their precomputed grids.");
    }
    api.figures.forEach(function (fig) {
      fig.busy = false;
      fig.snap();
    });
  }

  function onMessage(event) {
    var m = event.data;
    if (m.type === "ready") {
      clearTimeout(loadTimer);
      api.state = "ready";
      api.python = m.python;
      api.timings.readyMs = performance.now() - api.timings.firstInteraction;
      api.timings.workerPhasesMs = m.phases;
      api.figures.forEach(function (fig) { fig.onReady(); });
    } else if (m.type === "failed") {
      fail("Python did not start (" + m.message + ")");
    } else if (m.type === "result" || m.type === "error") {
      var callback = waiting[m.id];
      delete waiting[m.id];
      if (callback) {
        callback(m);
      }
    }
  }

  function run(payload, callback) {
    var id = nextId++;
    waiting[id] = callback;
    worker.postMessage({type: "run", id: id,
                        payload: JSON.stringify(payload)});
  }

  // ------------------------------------------------------------------
  // Controls
  // ------------------------------------------------------------------

  function nearestIndex(c, value) {
    if (c.kind === "select") {
      var i = c.grid.indexOf(value);
      return i < 0 ? 0 : i;
    }
    var best = 0;
    var bestDistance = Infinity;
    c.grid.forEach(function (g, j) {
      var d = c.log ? Math.abs(Math.log(value / g)) : Math.abs(value - g);
      if (d < bestDistance) {
        best = j;
        bestDistance = d;
      }
    });
    return best;
  }

  function formatValue(c, v) {
    return c.integer ? String(Math.round(v)) : String(+v.toPrecision(6));
  }

  // One control: its spec (from the page JSON), its elements and value.
  function Control(fig, spec, element) {
    var self = this;
    this.spec = spec;
    this.value = spec.value;
    this.element = element;
    var kind = spec.kind;
    if (kind === "select") {
      var select = element.querySelector("select");
      select.addEventListener("change", function () {
        self.value = spec.grid[+select.value];
        fig.changed();
      });
      this.show = function () {
        select.value = String(spec.grid.indexOf(self.value));
      };
      return;
    }
    var slider = element.querySelector("input[type=range]");
    var box = element.querySelector("input[type=number]");
    if (slider) {
      if (spec.log) {
        var lo = Math.log10(spec.min);
        var hi = Math.log10(spec.max);
        slider.min = String(lo);
        slider.max = String(hi);
      } else {
        slider.min = String(spec.min);
        slider.max = String(spec.max);
      }
      // In the slider's own unit (decades on a log slider), at least 1 %
      // of its span (figures/live/controls.py).
      slider.step = String(spec.step);
      slider.addEventListener("input", function () {
        var v = +slider.value;
        if (spec.log) {
          v = +Math.pow(10, v).toPrecision(3);
        }
        self.set(v, false);
        fig.changed();
      });
    }
    box.addEventListener("change", function () {
      var v = parseFloat(box.value);
      if (!isFinite(v)) {
        self.show();
        return;
      }
      self.set(v, true);
      fig.changed();
    });
    this.set = function (v, moveSlider) {
      v = Math.min(spec.max, Math.max(spec.min, v));
      if (spec.integer) {
        v = Math.round(v);
      }
      self.value = v;
      box.value = formatValue(spec, v);
      if (slider && moveSlider) {
        slider.value = String(spec.log ? Math.log10(v) : v);
      }
    };
    this.show = function () {
      self.set(self.value, true);
    };
  }

  // ------------------------------------------------------------------
  // Figures
  // ------------------------------------------------------------------

  function Figure(root) {
    var self = this;
    this.root = root;
    this.id = root.id;
    this.plot = document.getElementById(root.id + "-plot");
    this.spec = JSON.parse(
      document.getElementById(root.id + "-data").textContent);
    this.live = Boolean(this.spec["function"]);
    this.status = root.querySelector(".qd-live-status");
    this.busy = false;
    this.pending = false;
    this.touched = false;
    this.changedAt = null;
    this.drawn = null;   // {mode, values}
    this.error = "";
    var rows = root.querySelectorAll(".qd-live-control");
    this.controls = this.spec.controls.map(function (c, i) {
      return new Control(self, c, rows[i]);
    });
    this.controls.forEach(function (c) { c.show(); });
  }

  Figure.prototype.values = function () {
    var v = {};
    this.controls.forEach(function (c) { v[c.spec.name] = c.value; });
    return v;
  };

  Figure.prototype.changed = function () {
    this.touched = true;
    this.changedAt = performance.now();
    if (this.live && api.state === "idle") {
      start();
    }
    if (this.live && api.state === "ready") {
      this.request();
    } else {
      this.snap();
    }
  };

  // Draw the precomputed point nearest to the controls' values.
  Figure.prototype.snap = function () {
    var idx = [];
    var snapped = {};
    var only = this.spec.precompute;
    this.controls.forEach(function (c) {
      // A control precomputed at its first view only (not named in the
      // figure's "precompute" list) stays there.
      var i = only && only.indexOf(c.spec.name) < 0 ?
        c.spec.grid.indexOf(c.spec.value) : nearestIndex(c.spec, c.value);
      idx.push(i);
      snapped[c.spec.name] = c.spec.grid[i];
    });
    var key = idx.join(",");
    var frame = this.spec.frames[key];
    var mode = this.live && api.state === "loading" ? "loading" :
      (this.live && (api.state === "failed" || api.state === "unsupported") ?
        "fallback" : "grid");
    this.draw(frame, mode, snapped, key, null);
  };

  Figure.prototype.request = function () {
    var self = this;
    if (this.busy) {
      this.pending = true;
      return;
    }
    this.busy = true;
    var values = this.values();
    var since = this.changedAt;
    run({"function": this.spec["function"], fixed: this.spec.fixed,
         controls: this.spec.controls, values: values},
      function (m) {
        self.busy = false;
        if (m.type === "error") {
          self.error = m.message;
          console.error("Queue Depth live figure " + self.id + ": " +
                        m.message);
          self.refresh();
        } else {
          self.error = "";
          var key = "live:" + JSON.stringify(values);
          self.draw(JSON.parse(m.json), "live", values, key,
                    {since: since, computeMs: m.ms});
        }
        if (self.pending) {
          self.pending = false;
          self.request();
        }
      });
  };

  Figure.prototype.onReady = function () {
    if (this.live && this.touched) {
      this.request();
    } else {
      this.refresh();
    }
  };

  Figure.prototype.draw = function (frame, mode, values, key, timing) {
    var self = this;
    var layout = Object.assign({}, this.spec.layout,
                               {shapes: frame.shapes || []});
    if (frame.title) {
      var style = this.spec.layout.title;  // a font, say, for every frame
      layout.title = Object.assign(
        {}, style && typeof style === "object" ? style : {},
        {text: frame.title});
    }
    if (!window.Plotly) {
      return;
    }
    // Kept for a redraw at another window width (the title's lines).
    this.last = {frame: frame, mode: mode, values: values, key: key};
    window.Plotly.react(this.plot, frame.traces, layout, PLOT_CONFIG)
      .then(function () {
        return self.fitTitle(frame, layout, 0);
      })
      .then(function () {
        self.drawn = {mode: mode, values: values};
        self.root.setAttribute("data-frame", key);
        self.root.setAttribute("data-values", JSON.stringify(values));
        if (timing && timing.since !== null) {
          var ms = performance.now() - timing.since;
          var t = api.timings;
          var first = t.firstLiveUpdateMs === null;
          if (first) {
            t.firstLiveUpdateMs = performance.now() - t.firstInteraction;
          }
          self.root.setAttribute("data-first-live", first ? "1" : "0");
          t.updates.push({figure: self.id, ms: ms,
                          computeMs: timing.computeMs});
          self.root.setAttribute("data-update-ms", ms.toFixed(1));
        }
        self.refresh();
      });
  };

  // Break a title into lines at spaces, none longer than ``chars``
  // characters; lines the title already has (<br>) are kept.
  function wrapTitle(text, chars) {
    return text.split("<br>").map(function (part) {
      var lines = [];
      var line = "";
      part.split(" ").forEach(function (word) {
        if (line && (line + " " + word).length > chars) {
          lines.push(line);
          line = word;
        } else {
          line = line ? line + " " + word : word;
        }
      });
      lines.push(line);
      return lines.join("<br>");
    }).join("<br>");
  }

  function longestLine(text) {
    return Math.max.apply(null, text.split("<br>").map(function (l) {
      return l.length;
    }));
  }

  // A title wider than the figure (a phone's 390 px) would run off both of
  // its sides: it is drawn again in as many lines as it needs, measured as
  // drawn.  The top margin grows by the lines added (1.3 times the title's
  // font size each; Plotly's default margin is 100 px) and the title hangs
  // from the figure's top edge, so the plot area (and an x axis drawn above
  // it) moves down clear of it; Plotly places a title of several lines
  // anchored at its top a few px too high, so that is measured and added
  // too.  At most four more draws; a width where it fits draws once.
  Figure.prototype.fitTitle = function (frame, layout, tries) {
    var self = this;
    var drawn = this.plot.querySelector(".gtitle");
    var room = this.plot.clientWidth - 16;  // px, 8 px clear of each side
    if (!frame.title || !drawn || tries >= 4 || room <= 0) {
      return null;
    }
    var box = drawn.getBoundingClientRect();
    var above = this.plot.getBoundingClientRect().top + 2 - box.top;  // px
    var title = layout.title;
    if (box.width > room) {
      var chars = Math.max(
        8, Math.floor(longestLine(title.text) * room / box.width) - 1);
      var wrapped = wrapTitle(frame.title, chars);
      var added = wrapped.split("<br>").length -
        frame.title.split("<br>").length;
      var size = this.plot._fullLayout.title.font.size;  // px
      var margin = Object.assign({t: 100}, this.spec.layout.margin);
      layout.margin = Object.assign(
        {}, margin, {t: margin.t + Math.ceil(added * 1.3 * size)});
      layout.title = Object.assign({}, title, {
        text: wrapped, y: 1, yref: "container", yanchor: "top", pad: {t: 6}});
    } else if (title.yanchor === "top" && above > 0) {
      var down = Math.ceil(above);  // px
      layout.margin = Object.assign({}, layout.margin,
                                    {t: layout.margin.t + down});
      layout.title = Object.assign({}, title,
                                   {pad: {t: title.pad.t + down}});
    } else {
      return null;
    }
    return window.Plotly.react(this.plot, frame.traces, layout, PLOT_CONFIG)
      .then(function () {
        return self.fitTitle(frame, layout, tries + 1);
      });
  };

  // The window changed width: every figure draws its frame again, so that
  // its title's lines fit the new width (after Plotly's own resize).
  var resizeTimer = null;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      api.figures.forEach(function (fig) {
        var d = fig.last;
        if (d && d.frame.title) {
          fig.draw(d.frame, d.mode, d.values, d.key, null);
        }
      });
    }, 150);
  }

  function describe(fig, values) {
    return fig.controls.map(function (c) {
      return c.spec.label + " " + values[c.spec.name];
    }).join(", ");
  }

  Figure.prototype.refresh = function () {
    var drawn = this.drawn || {mode: "grid", values: this.values()};
    var n = this.root.getAttribute("data-grid-points");
    var mode = drawn.mode;
    if (mode !== "live" && this.live) {
      mode = {loading: "loading", failed: "fallback",
              unsupported: "fallback"}[api.state] || "grid";
    }
    var snappedAway = this.live && drawn.mode !== "live" &&
      JSON.stringify(drawn.values) !== JSON.stringify(this.values());
    var text;
    if (!this.live) {
      text = "Precomputed grid of " + n + " points.";
    } else if (mode === "live") {
      var last = this.root.getAttribute("data-update-ms");
      var started = this.root.getAttribute("data-first-live") === "1";
      text = "Live: " + this.spec["function"] + " ran in your browser" +
        " (Python " + api.python + ", WebAssembly)" +
        (last ? (started ? "; starting Python and the first update took " :
                 ", updated in ") + Math.round(+last) + " ms" : "") + ".";
    } else if (mode === "loading") {
      text = "Starting Python in your browser (about 14 MB the first " +
        "time)... Meanwhile: the nearest of " + n + " precomputed points" +
        (snappedAway ? " (" + describe(this, drawn.values) + ")" : "") + ".";
    } else if (mode === "fallback") {
      text = "Precomputed grid only: " + api.reason + ". Values snap to " +
        "the nearest of " + n + " points computed when the book was built" +
        (snappedAway ? "; showing " + describe(this, drawn.values) : "") + ".";
    } else if (api.state === "ready") {
      text = "Python is running in your browser: move a control to " +
        "re-run the model. Showing a precomputed point.";
    } else {
      text = "Precomputed: one of " + n + " grid points computed when the " +
        "book was built. Move a control, or press run live, to re-run the " +
        "model itself in your browser, for any value in the stated ranges.";
    }
    if (this.error) {
      text += " The last update failed: " + this.error;
    }
    this.root.setAttribute("data-mode", mode);
    this.status.setAttribute("data-mode", mode);
    this.status.textContent = text + " ";
    if (this.live && api.state === "idle") {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "qd-live-start";
      button.textContent = "\u25b6 run live";
      var fig = this;
      button.addEventListener("click", function () {
        fig.touched = true;
        fig.changedAt = performance.now();
        start();
      });
      this.status.appendChild(button);
    }
  };

  function refreshAll() {
    api.figures.forEach(function (fig) { fig.refresh(); });
  }

  function init() {
    if (!window.Plotly) {
      return;  // the placeholder text in the plot stays
    }
    var reason = unsupportedReason();
    if (reason) {
      api.state = "unsupported";
      api.reason = reason;
    }
    var roots = document.querySelectorAll(".qd-live-figure");
    Array.prototype.forEach.call(roots, function (root) {
      var data = document.getElementById(root.id + "-data");
      if (!data || root.getAttribute("data-mode") !== "static") {
        // Written by an older figures.live (a page executed before the
        // live figures and kept in Jupyter Book's cache): it draws itself.
        return;
      }
      var fig = new Figure(root);
      api.figures.push(fig);
      fig.plot.textContent = "";
      fig.draw(fig.spec.frames[fig.spec["default"]], "grid", fig.values(),
               fig.spec["default"], null);
    });
    window.addEventListener("resize", onResize);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
