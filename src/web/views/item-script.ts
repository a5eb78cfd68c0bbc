/**
 * The item page's script (`/app/item.js`), served by Shiplog itself. It only adds to the comment
 * box, which works without it: Ctrl+Enter (Cmd+Enter) posts the comment through the form's own
 * Post button, and what is typed is kept in the browser until the page says it was posted, so that
 * nothing typed is lost to a failed post, an expired form, a closed tab or a lost connection (a
 * post the server refuses comes back with the text in the box anyway). Plain ES5, nothing to build.
 */
export const ITEM_SCRIPT = `(function () {
  'use strict';
  var form = document.getElementById('comment-form');
  var box = document.getElementById('comment-body');
  if (!form || !box) return;
  var post = form.querySelector('button[name=post]');
  var hint = document.getElementById('comment-keys');
  if (hint) hint.hidden = false;
  var store = null;
  try { store = window.localStorage; } catch (e) { store = null; }
  var key = 'shiplog-comment:' + location.pathname;
  if (store) {
    var flash = document.getElementById('flash');
    if (flash && flash.getAttribute('data-done') === 'commented') store.removeItem(key);
    else if (box.value === '' && store.getItem(key)) box.value = store.getItem(key);
    box.addEventListener('input', function () {
      try {
        if (box.value) store.setItem(key, box.value); else store.removeItem(key);
      } catch (e) { /* storage full or refused: the box still holds the text */ }
    });
  }
  box.addEventListener('keydown', function (e) {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    if (form.requestSubmit) form.requestSubmit(post); else post.click();
  });
})();
`;
