// Opened from a file:// address, a browser refuses the page's JavaScript modules and its WebAssembly
// (they need an http(s) origin), so the lab never starts. This classic script (which file:// still runs,
// and which the page's Content-Security-Policy allows as its own file) says so and how to serve the folder,
// instead of leaving a blank page. Served over http(s) it does nothing.
(function fileNotice() {
  if (location.protocol !== "file:") return;
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    node.append(...children);
    return node;
  };
  const code = (text) => el("code", {}, text);
  const box = el("div", { class: "file-notice", role: "alert", "data-testid": "file-notice" },
    el("p", {}, el("strong", {}, "This page has to be served, not opened as a file."),
      " Browsers do not run its JavaScript modules and WebAssembly from a file:// address, so the lab cannot start."),
    el("p", {}, "In the folder that holds this page, run ", code("python3 -m http.server 8080"),
      " (or ", code("npx serve ."), ") and open ", code("http://127.0.0.1:8080/"),
      ". In a checkout of attention-lab, ", code("npm start"), " (or ", code("node scripts/serve.mjs"),
      " after the build) serves it and prints the address."));
  const start = () => {
    const main = document.querySelector("main") ?? document.body;
    main.prepend(box);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
