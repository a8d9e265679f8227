/* The ipywidgets HTML manager typesets widget labels through the MathJax 2 API (MathJax.Hub.Queue), while
   this book serves MathJax 3. Forward those calls to MathJax 3 so widget pages raise no errors. */
(function () {
  function install() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) { return; }
    mj.Hub = {
      Queue: function () {
        for (var i = 0; i < arguments.length; i++) {
          var job = arguments[i];
          if (Array.isArray(job) && job[0] === "Typeset") {
            var el = job[2];
            if (window.MathJax.typesetPromise) {
              window.MathJax.typesetPromise(el ? [el] : undefined).catch(function () {});
            }
          } else if (typeof job === "function") {
            job();
          }
        }
      },
      Config: function () {},
      Register: { StartupHook: function () {}, MessageHook: function () {} }
    };
  }
  if (!window.MathJax) { window.MathJax = {}; }
  install();
  document.addEventListener("DOMContentLoaded", install);
  window.addEventListener("load", install);
})();
