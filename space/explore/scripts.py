"""The explorer's page scripts and CSS (installed by the detail's ``gr.HTML``, so they work in both homes of the
explorer, ``madqa view`` and the Space's tab, without touching the host page)."""

from __future__ import annotations

import json

#: The page's own CSS, installed by the detail's script (a ``gr.HTML`` cannot rely on the host page's CSS, and the
#: Space's tab has no ``launch(css=…)`` of its own). The question table wraps between words (gradio wraps its cells
#: anywhere, "comprehen/sion"); a token longer than its column (see :func:`.table.column_widths`) still wraps.
EXPLORE_CSS = """
#explore-table .cell-wrap span.wrap, #explore-table .header-cell span { word-break: normal; overflow-wrap: anywhere; }
"""
#: Installs :data:`EXPLORE_CSS` once per page. A click on a thumbnail in the detail opens the page large: the
#: thumbnail at once, then the large render from the server function ``page_image``; a click anywhere, the close
#: control or Escape closes it. Installed by the detail's gr.HTML (``js_on_load``), so it works in both homes without
#: touching the host page.
ZOOM_JS = """
if (!document.getElementById('explore-css')) {
  const style = document.createElement('style');
  style.id = 'explore-css'; style.textContent = __CSS__; document.head.appendChild(style);
}
element.addEventListener('click', async (e) => {
  const img = e.target.closest ? e.target.closest('img.thumb') : null;
  if (!img) return;
  let box = document.getElementById('explore-zoom');
  if (!box) {
    box = document.createElement('div');
    box.id = 'explore-zoom';
    box.style.cssText = 'position:fixed;inset:0;z-index:1000;background:rgba(0,0,0,.8);overflow:auto;' +
      'display:none;text-align:center;padding:8px;cursor:zoom-out';
    // a visible close control (a click anywhere and Escape close it too, but neither is shown)
    box.innerHTML = "<button id='explore-zoom-close' type='button' aria-label='Close the page view' " +
      "style='position:fixed;top:8px;right:12px;font:24px sans-serif;background:#fff;border:0;" +
      "border-radius:4px;padding:0 10px;cursor:pointer'>× Close</button>" +
      "<div id='explore-zoom-label' style='color:#fff;margin:4px;font:14px sans-serif'></div>" +
      "<img id='explore-zoom-img' alt='page' style='width:min(1000px,100%);height:auto;background:#fff'>";
    box.addEventListener('click', () => { box.style.display = 'none'; });
    document.addEventListener('keydown', (k) => { if (k.key === 'Escape') box.style.display = 'none'; });
    document.body.appendChild(box);
  }
  const big = box.querySelector('#explore-zoom-img'), label = box.querySelector('#explore-zoom-label');
  big.src = img.src; big.dataset.large = '';
  label.textContent = img.alt + ' (loading…)';
  box.style.display = 'block';
  const uri = await server.page_image(img.dataset.doc, img.dataset.page);
  if (uri && big.src === img.src) { big.src = uri; big.dataset.large = '1'; }
  label.textContent = img.alt + (uri ? '' : ' (no larger render)');
});
"""
ZOOM_JS = ZOOM_JS.replace("__CSS__", json.dumps(EXPLORE_CSS))
#: After the link box gets its ``?q=…`` query: the full address, also shown in the browser's address bar.
LINK_JS = """(v) => {
  if (!v || !v.startsWith('?')) return v;
  const u = new URL(window.location.href); u.search = v.slice(1);
  try { history.replaceState(null, '', u); } catch (e) {}
  return u.href;
}"""
