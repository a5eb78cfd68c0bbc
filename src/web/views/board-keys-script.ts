/**
 * The second half of `/app/board.js`: moves without leaving the page, the keys, *More* in place,
 * the columns as tabs on a phone, and the board following changes made elsewhere. The first half
 * (board-script.ts) sets `window.shiplogBoard`; each part only adds to a page that works without it.
 */
export const BOARD_KEYS_SCRIPT = `(function () {
  'use strict';
  var board = document.querySelector('.board');
  var api = window.shiplogBoard;
  if (!board || !api || !window.DOMParser) return;
  var STATUSES = ['backlog', 'in-progress', 'completed', 'accepted'];
  var pending = null;
  var working = 0;

  function allCards() {
    return Array.prototype.filter.call(board.querySelectorAll('li.card[data-number]'), function (c) {
      return c.offsetParent !== null;
    });
  }
  function cardOf(node) { return node && node.closest ? node.closest('li.card[data-number]') : null; }
  function focusCard(card) {
    if (!card) return;
    card.focus();
    if (card.scrollIntoView) card.scrollIntoView({ block: 'nearest' });
  }
  function focusNumber(number) {
    focusCard(board.querySelector('li.card[data-number="' + number + '"]'));
  }
  /** The board as the server has it now (without the notice of the change that led here). */
  function boardUrl() {
    var q = new URLSearchParams(location.search);
    q.delete('created');
    q.delete('moved');
    var s = q.toString();
    return location.pathname + (s ? '?' + s : '');
  }
  /**
   * Whether a refresh now would undo what the person is doing (a move menu open, a card being
   * dragged), or cross a change of this page's own still on its way (its own refresh says what it did).
   */
  function busy() { return working > 0 || !!board.querySelector('details.move[open], .card.dragging'); }
  /** Holds changes made elsewhere back until \`promise\` (a move of this page's and its refresh) settles. */
  function work(promise) {
    working += 1;
    function done() { working -= 1; later(); }
    promise.then(done, done);
    return promise;
  }
  api.work = work;

  /** Fetches the board again and puts its columns in place; focus goes to the card numbered focus, if given. */
  function refresh(focus, message) {
    return fetch(boardUrl(), { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (res) {
        if (!res.ok) throw new Error('The board could not be loaded again; reload the page.');
        return res.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var fresh = doc.querySelector('.board');
        if (!fresh) throw new Error('The board could not be loaded again; reload the page.');
        var had = document.activeElement ? cardOf(document.activeElement) : null;
        board.innerHTML = fresh.innerHTML;
        board.setAttribute('data-revision', fresh.getAttribute('data-revision'));
        var tabs = document.querySelector('.column-tabs');
        var freshTabs = doc.querySelector('.column-tabs');
        if (tabs && freshTabs) tabs.innerHTML = freshTabs.innerHTML;
        api.decorate();
        showTab(current);
        if (focus) focusNumber(focus);
        else if (had) focusNumber(had.getAttribute('data-number'));
        if (message) api.announce(message);
      })
      .catch(function (err) { api.say(err.message); });
  }
  api.refresh = refresh;

  /** Posts a card's move form with these fields, then shows the board as it now is. */
  function move(card, fields, message) {
    var form = card.querySelector('form.move');
    if (!form) return;
    var body = new URLSearchParams();
    body.set('csrf', form.elements.csrf.value);
    Object.keys(fields).forEach(function (k) { body.set(k, fields[k]); });
    var number = card.getAttribute('data-number');
    var asJson = { accept: 'application/json' };
    work(fetch(form.action, { method: 'POST', body: body, credentials: 'same-origin', headers: asJson })
      .then(function (res) {
        if (res.ok) return refresh(number, message);
        return res.json().then(function (a) { api.say(a.message); },
          function () { api.say('The card could not be moved.'); });
      })
      .catch(function () { api.say('The card could not be moved: no connection.'); }));
  }
  function statusOf(card) { return card.closest('.column').getAttribute('data-status'); }
  function hidden(card, name) {
    var input = card.querySelector('form.move input[name=' + name + ']');
    return input ? input.value : null;
  }

  // The move menu's buttons, posted in place.
  board.addEventListener('submit', function (e) {
    var form = e.target;
    if (!form.classList.contains('move')) return;
    e.preventDefault();
    var card = cardOf(form);
    var button = e.submitter;
    if (!card || !button) return;
    var fields = {};
    fields[button.name] = button.value;
    var number = card.getAttribute('data-number');
    if (button.value === 'up') fields.above = hidden(card, 'above');
    if (button.value === 'down') fields.below = hidden(card, 'below');
    var what = button.name === 'status' ? 'to ' + button.value : button.value === 'top' ? 'to the top' : button.value;
    move(card, fields, 'Moved #' + number + ' ' + what + '.');
  });

  function keyMove(card, key) {
    var number = card.getAttribute('data-number');
    var status = statusOf(card);
    if (key === 'ArrowUp' || key === 'ArrowDown') {
      var up = key === 'ArrowUp';
      var past = hidden(card, up ? 'above' : 'below');
      var edge = up ? 'top' : 'bottom';
      if (!past) return api.announce('#' + number + ' is already at the ' + edge + ' it can move to.');
      var fields = up ? { to: 'up', above: past } : { to: 'down', below: past };
      return move(card, fields, 'Moved #' + number + (up ? ' up' : ' down') + ' in ' + status + '.');
    }
    var at = STATUSES.indexOf(status);
    var to = STATUSES[at + (key === 'ArrowLeft' ? -1 : 1)];
    if (at < 0 && key === 'ArrowRight') to = STATUSES[0];
    if (!to) return api.announce('#' + number + ' is in the ' + (key === 'ArrowLeft' ? 'first' : 'last') + ' column.');
    move(card, { to: 'status', status: to }, 'Moved #' + number + ' to ' + to + '.');
  }

  // The list of keys: a panel that ? opens and Escape closes (without script, a section below).
  var keys = document.getElementById('board-keys');
  var before = null;
  if (keys) { keys.hidden = true; keys.classList.add('panel'); }
  function toggleKeys(show) {
    if (!keys) return;
    if (show) { before = document.activeElement; keys.hidden = false; keys.focus(); }
    else { keys.hidden = true; if (before && before.focus) before.focus(); }
  }
  var help = document.querySelector('.board-help a[href="#board-keys"]');
  if (help) help.addEventListener('click', function (e) { e.preventDefault(); toggleKeys(true); });

  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    if (e.key === 'Escape' && keys && !keys.hidden) { e.preventDefault(); return toggleKeys(false); }
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var card = cardOf(t);
    var cards = allCards();
    if ((e.key === 'j' || e.key === 'k') && !e.shiftKey) {
      e.preventDefault();
      var at = card ? cards.indexOf(card) : -1;
      var next = e.key === 'j' ? cards[at + 1] || (at < 0 ? cards[0] : null) : at > 0 ? cards[at - 1] : null;
      return focusCard(next || card || cards[0]);
    }
    if (e.shiftKey && card && /^Arrow(Up|Down|Left|Right)$/.test(e.key)) {
      e.preventDefault();
      return keyMove(card, e.key);
    }
    if (e.key === 'Enter' && card && t === card) {
      var link = card.querySelector('.title a');
      if (link) { e.preventDefault(); link.click(); }
      return;
    }
    // (/ is every page's: the search box, in forms.js.)
    var to = e.key === 'c' ? document.getElementById('new-type') : e.key === 'f' ?
      document.getElementById('filter-q') : null;
    if (to) { e.preventDefault(); to.focus(); if (to.scrollIntoView) to.scrollIntoView({ block: 'center' }); return; }
    if (e.key === '?') { e.preventDefault(); toggleKeys(keys && keys.hidden); }
  });

  // More: the next cards of a column, added to it.
  board.addEventListener('click', function (e) {
    var link = e.target.closest ? e.target.closest('a.more') : null;
    if (!link || /Earlier/.test(link.textContent)) return;
    var column = link.closest('.column');
    var list = column.querySelector('ol.cards');
    e.preventDefault();
    fetch(link.href, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (res) { if (!res.ok) throw new Error(); return res.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var fresh = doc.querySelector('.column[data-status="' + column.getAttribute('data-status') + '"]');
        var added = fresh ? fresh.querySelectorAll('ol.cards > li.card') : [];
        var first = added[0];
        Array.prototype.forEach.call(added, function (c) {
          if (!list.querySelector('li.card[data-number="' + c.getAttribute('data-number') + '"]')) list.appendChild(c);
        });
        var nextMore = null;
        if (fresh) Array.prototype.forEach.call(fresh.querySelectorAll('a.more'), function (a) {
          if (!/Earlier/.test(a.textContent)) nextMore = a;
        });
        if (nextMore) { link.href = nextMore.href; link.textContent = nextMore.textContent; } else link.remove();
        api.decorate();
        if (first) focusNumber(first.getAttribute('data-number'));
        api.announce(added.length + ' more cards in ' + column.getAttribute('data-status') + '.');
      })
      .catch(function () { location.href = link.href; });
  });

  // On a phone, one column at a time: the links above the board pick which.
  var tabs = document.querySelector('.column-tabs');
  var narrow = window.matchMedia ? window.matchMedia('(max-width: 40rem)') : null;
  var current = null;
  function showTab(status) {
    if (!tabs || !narrow) return;
    var columns = board.querySelectorAll('.column');
    if (!status && columns[0]) status = columns[0].getAttribute('data-status');
    current = status;
    board.classList.toggle('tabbed', narrow.matches);
    Array.prototype.forEach.call(columns, function (c) {
      c.classList.toggle('current', c.getAttribute('data-status') === status);
    });
    Array.prototype.forEach.call(tabs.querySelectorAll('a'), function (a) {
      if (a.getAttribute('data-status') === status) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    });
  }
  if (tabs && narrow) {
    tabs.addEventListener('click', function (e) {
      var a = e.target.closest ? e.target.closest('a[data-status]') : null;
      if (!a || !narrow.matches) return;
      e.preventDefault();
      showTab(a.getAttribute('data-status'));
    });
    if (narrow.addEventListener) narrow.addEventListener('change', function () { showTab(current); });
    showTab(null);
  }

  // Changes made elsewhere (live.js): the board is fetched again, unless a move menu is open.
  function shown(e) {
    var revision = e.detail && e.detail.revision;
    return revision && Number(board.getAttribute('data-revision')) >= revision;
  }
  document.addEventListener('shiplog:change', function (e) {
    if (shown(e)) return;
    if (busy()) { pending = e; return; }
    work(refresh(null, 'The board changed.'));
  });
  /** A change held back while the board was busy: shown now, unless the board already shows it. */
  function later() {
    if (!pending || busy()) return;
    var e = pending;
    pending = null;
    if (!shown(e)) work(refresh(null, 'The board changed.'));
  }
  board.addEventListener('toggle', later, true);
  board.addEventListener('dragend', function () { setTimeout(later, 0); });

  var notice = document.getElementById('notice');
  var made = new URLSearchParams(location.search).get('created') || new URLSearchParams(location.search).get('moved');
  if (made) focusNumber(made);
  else if (notice) notice.focus();
})();
`;
