/**
 * `/app/live.js`: one event stream a page (the element with `data-live` names it), whose changes
 * are told to the page as a `shiplog:change` event (the board's script fetches its columns again).
 * On an item's page it fetches the page again when the item (or something unnamed) changed: all of
 * it when nothing is being typed, only the item's facts otherwise, so nothing typed is ever lost.
 * Without script the page simply does not follow changes. Plain ES5, nothing to build.
 */
export const LIVE_SCRIPT = `(function () {
  'use strict';
  var el = document.querySelector('[data-live]');
  if (!el || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var source = new EventSource(el.getAttribute('data-live'));
  source.addEventListener('change', function (e) {
    var detail;
    try { detail = JSON.parse(e.data); } catch (err) { return; }
    var event;
    try { event = new CustomEvent('shiplog:change', { detail: detail }); } catch (err) { return; }
    document.dispatchEvent(event);
  });
  window.addEventListener('pagehide', function () { source.close(); });

  var item = el.getAttribute('data-item');
  if (!item) return;
  var main = document.querySelector('main');
  var shown = Number(el.getAttribute('data-revision'));
  function typing() {
    var fields = main.querySelectorAll('input, textarea, select');
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.type === 'hidden') continue;
      if (f.tagName === 'SELECT') {
        for (var j = 0; j < f.options.length; j++) {
          if (f.options[j].selected !== f.options[j].defaultSelected) return true;
        }
      } else if (f.type === 'checkbox' || f.type === 'radio') {
        if (f.checked !== f.defaultChecked) return true;
      } else if (f.value !== f.defaultValue) return true;
    }
    var active = document.activeElement;
    return !!(active && active.form && main.contains(active));
  }
  function pageUrl() {
    var q = new URLSearchParams(location.search);
    q.delete('done');
    var s = q.toString();
    return location.pathname + (s ? '?' + s : '');
  }
  document.addEventListener('shiplog:change', function (e) {
    var d = e.detail || {};
    if (d.revision && d.revision <= shown) return;
    if (d.items && d.items.length && d.items.indexOf(Number(item)) < 0) return;
    fetch(pageUrl(), { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (res) { if (!res.ok) throw new Error(); return res.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var fresh = doc.querySelector('main');
        if (!fresh) return;
        shown = d.revision || shown;
        if (typing()) {
          var facts = main.querySelector('article.item');
          var freshFacts = fresh.querySelector('article.item');
          if (facts && freshFacts && !facts.contains(document.activeElement)) facts.innerHTML = freshFacts.innerHTML;
        } else {
          main.innerHTML = fresh.innerHTML;
          var again = document.createElement('script');
          again.src = '/app/item.js';
          document.body.appendChild(again);
        }
        var note = document.getElementById('live-note');
        if (note) note.textContent = 'This item was changed elsewhere; the page shows it.';
      })
      .catch(function () { /* the page stays as it is; the next change tries again */ });
  });
})();
`;
