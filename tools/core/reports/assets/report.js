/* report.html's script (embed.cmake compiles it in; this comment is left out). One listener
   for the whole heat map, no handler per cell: which run and outcome the pointer is over; one
   for the reproduce commands' copy buttons.
   OUTCOMES is replaced by the map of cell symbols to outcome names (report_html.cpp). */
(function () {
  /* A reproduce command's copy button: the command is selected (Ctrl+C works whatever the
     browser allows a file:// page), then copied where the clipboard may be written. */
  document.addEventListener('click', function (e) {
    var button = e.target.closest ? e.target.closest('button.copy') : null;
    if (!button) return;
    var code = button.parentNode.querySelector('code.cmd'), range = document.createRange();
    range.selectNodeContents(code);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    var said = function (copied) { button.textContent = copied ? 'copied' : 'selected: Ctrl+C copies it'; };
    var fallback = function () { var ok = false; try { ok = document.execCommand('copy'); } catch (x) {} said(ok); };
    if (navigator.clipboard && navigator.clipboard.writeText)
      navigator.clipboard.writeText(code.textContent).then(function () { said(true); }, fallback);
    else fallback();
  });
  var cols = document.querySelector('.cols'), box = document.getElementById('readout');
  if (!cols) return;
  var runs = Array.prototype.map.call(cols.children, function (e) { return e.textContent; });
  document.addEventListener('mousemove', function (e) {
    var cell = e.target.closest ? e.target.closest('td.k') : null;
    if (!cell) { box.hidden = true; return; }
    var r = cell.getBoundingClientRect(), text = cell.textContent;
    var i = Math.floor((e.clientX - r.left) * text.length / r.width);
    if (i < 0 || i >= text.length) { box.hidden = true; return; }
    box.textContent = runs[i] + ': ' + OUTCOMES[text[i]] + '  \u00b7  ' + cell.parentNode.lastChild.textContent;
    box.hidden = false;
  });
})();
