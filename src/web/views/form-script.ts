/**
 * `/app/forms.js`, which every page loads: `/` focuses the search box from anywhere but a field;
 * and a page that comes back with a refused form brings its first refused field (the first
 * `aria-invalid="true"` in the page, whose reason is next to it through `aria-describedby`; see
 * `invalidAttrs`) into view and focuses it, whichever form it is.
 * Without script the reason is still next to the field. Plain ES5, nothing to build.
 */
export const FORM_SCRIPT = `(function () {
  'use strict';
  // / from anywhere but a field: the page's search box (the header's, or the results page's own).
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.getElementById('search-q');
    if (!box) return;
    e.preventDefault();
    box.focus();
    if (box.select) box.select();
  });
  var refused = document.querySelector('[aria-invalid="true"]');
  if (!refused) return;
  if (refused.scrollIntoView) refused.scrollIntoView({ block: 'center' });
  try { refused.focus({ preventScroll: true }); } catch (e) { refused.focus(); }
})();
`;
