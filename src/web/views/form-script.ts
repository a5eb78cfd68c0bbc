/**
 * `/app/forms.js`, which every page loads: a page that comes back with a refused form brings its
 * first refused field (the first `aria-invalid="true"` in the page, whose reason is next to it
 * through `aria-describedby`; see `invalidAttrs`) into view and focuses it, whichever form it is.
 * Without script the reason is still next to the field. Plain ES5, nothing to build.
 */
export const FORM_SCRIPT = `(function () {
  'use strict';
  var refused = document.querySelector('[aria-invalid="true"]');
  if (!refused) return;
  if (refused.scrollIntoView) refused.scrollIntoView({ block: 'center' });
  try { refused.focus({ preventScroll: true }); } catch (e) { refused.focus(); }
})();
`;
