// Loaded between require.js and the widget manager (embed-amd.js of @jupyter-widgets/html-manager),
// all three from the book's _static (book/_ext/offline_assets.py).
(function () {
  "use strict";
  // this file's folder, _static/
  var here = document.currentScript.src.replace(/[^/]*$/, "");
  var dist = here + "vendor/html-manager/";
  // embed-amd.js defines its modules by name, and each takes the folder of its require.js address
  // (module.uri) as the place of its fonts. By default require.js makes that address from the name
  // and the page's folder (book/@jupyter-widgets/html-manager/dist/...), where nothing is served:
  // name the folder that holds the bundle and its fonts.
  window.require.config({
    paths: {
      "@jupyter-widgets/base": dist + "base",
      "@jupyter-widgets/controls": dist + "controls",
      "@jupyter-widgets/html-manager": dist + "html-manager",
      "@jupyter-widgets/html-manager/dist": dist.slice(0, -1),
    },
  });
  // The widgets' labels are typeset with MathJax 2's MathJax.Hub.Queue(["Typeset", MathJax.Hub, el]),
  // which throws under the MathJax 3 the book loads (it has no Hub). MathJax 3 is loaded deferred,
  // so it has replaced its configuration object by DOMContentLoaded; the widgets are drawn later,
  // on the window's load event: give them a Hub whose Queue typesets with MathJax 3.
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    if (!mj || mj.Hub || !mj.startup) {
      return;
    }
    mj.Hub = {
      Queue: function (job) {
        var el = Array.isArray(job) ? job[2] : undefined;
        return mj.startup.promise.then(function () {
          return mj.typesetPromise(el ? [el] : undefined);
        });
      },
    };
  });
})();
