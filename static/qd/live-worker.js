// Queue Depth: runs the book's own Python (models/ and figures/) in Pyodide,
// off the page's main thread.  Started as a module worker by live.js.
//
// Messages in:  {type: "start", pyodide: URL of the Pyodide folder,
//                bundle: URL of the zipped Python}
//               {type: "run", id, payload: JSON for figures.live.browser_call}
// Messages out: {type: "ready", python, ms, phases} or
//               {type: "failed", message}
//               {type: "result", id, json, ms} or {type: "error", id, message}
//
// Everything is fetched from the book itself; nothing from a CDN.

const EXTRACT_DIR = "/home/pyodide/queue-depth";
let engine = null;

async function start(msg) {
  const t0 = performance.now();
  const phases = {};
  const lap = (name, since) => {
    phases[name] = Math.round(performance.now() - since);
    return performance.now();
  };
  const { loadPyodide } = await import(msg.pyodide + "pyodide.mjs");
  let t = lap("import", t0);
  const pyodide = await loadPyodide({
    indexURL: msg.pyodide,
    stdout: () => {},
    stderr: (line) => console.warn("Python: " + line),
  });
  t = lap("loadPyodide", t);
  // "no-cache": revalidate, so a rebuilt book never runs stale Python.
  const response = await fetch(msg.bundle, { cache: "no-cache" });
  if (!response.ok) {
    throw new Error(`${msg.bundle}: HTTP ${response.status}`);
  }
  pyodide.unpackArchive(await response.arrayBuffer(), "zip",
                        { extractDir: EXTRACT_DIR });
  pyodide.runPython(`import sys; sys.path.insert(0, "${EXTRACT_DIR}")`);
  const call = pyodide.pyimport("figures.live").browser_call;
  const python = pyodide.runPython("import sys; sys.version.split()[0]");
  lap("bundle", t);
  return { call, python, phases, ms: performance.now() - t0 };
}

function lastLine(err) {
  const text = String((err && err.message) || err).trim();
  const lines = text.split("\n");
  return lines[lines.length - 1];
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "start") {
    engine = start(msg);
    try {
      const e = await engine;
      self.postMessage({ type: "ready", python: e.python, ms: e.ms,
                         phases: e.phases });
    } catch (err) {
      self.postMessage({ type: "failed", message: lastLine(err) });
    }
  } else if (msg.type === "run") {
    let e;
    try {
      e = await engine;
    } catch (err) {
      return; // the failure was reported when starting
    }
    const t0 = performance.now();
    try {
      const json = e.call(msg.payload);
      self.postMessage({ type: "result", id: msg.id, json,
                         ms: performance.now() - t0 });
    } catch (err) {
      self.postMessage({ type: "error", id: msg.id, message: lastLine(err) });
    }
  }
};
