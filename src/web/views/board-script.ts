/**
 * The one script of the pages (`/app/board.js`), served by Shiplog itself: it lets a card of the
 * board be dragged to another place in its column or into another column, with a mouse (the
 * browser's drag and drop) or by a finger or pen on the card's grip (pointer events; the grip does
 * not scroll the page, the rest of the card does). It only adds to the page: a drop sends the
 * card's own move form (its form token and action) with `to=place`, the column's status and the
 * cards it now sits between, and the server makes the same change as the buttons do. Without it
 * (or without JavaScript) the card's move menu still works.
 *
 * It also moves cards without leaving the page: the move menu's buttons and the keys (j/k between
 * cards, Shift+arrows to move one, c, /, ? for the list of keys) post the same form and the board's
 * columns are fetched again in place, focus staying on the moved card and the move said in a live
 * region. *More* loads the next cards into their column; on a phone the columns become tabs; and
 * the board follows changes made elsewhere through the product's event stream (/app/live.js).
 * Plain ES5 with no dependencies, so there is nothing to build.
 */
export const BOARD_SCRIPT = `(function () {
  'use strict';
  var board = document.querySelector('.board');
  if (!board || !window.fetch || !window.URLSearchParams) return;
  var dragged = null;
  var origin = null;
  var dropped = false;

  function cards(list) {
    return Array.prototype.filter.call(list.children, function (c) { return c.classList.contains('card') && c !== \
dragged; });
  }
  function numberOf(card) { return card.getAttribute('data-number'); }
  function listAt(target) {
    var column = target && target.closest ? target.closest('.column') : null;
    return column ? column.querySelector('ol.cards') : null;
  }
  /** The card the pointer is above the middle of (the dragged card goes before it), or null for the end. */
  function cardAfter(list, y) {
    var all = cards(list);
    for (var i = 0; i < all.length; i++) {
      var box = all[i].getBoundingClientRect();
      if (y < box.top + box.height / 2) return all[i];
    }
    return null;
  }
  function announce(message) {
    var live = document.getElementById('board-live');
    if (!live) return;
    live.textContent = '';
    setTimeout(function () { live.textContent = message; }, 50);
  }
  function say(message) {
    var note = document.getElementById('board-message');
    if (!note) {
      note = document.createElement('p');
      note.id = 'board-message';
      note.className = 'error';
      note.setAttribute('role', 'alert');
      board.parentNode.insertBefore(note, board);
    }
    note.textContent = message;
  }

  function decorate() {
    Array.prototype.forEach.call(board.querySelectorAll('ol.cards > li.card[data-number]'), function (card) {
      if (card.draggable) return;
      card.draggable = true;
      var grip = document.createElement('span');
      grip.className = 'grip';
      grip.setAttribute('aria-hidden', 'true');
      grip.title = 'Drag to move';
      card.insertBefore(grip, card.firstChild);
    });
  }
  decorate();
  board.classList.add('draggable');
  // moving: this page's moves still on their way (the keys' half waits for them before following changes).
  window.shiplogBoard = { announce: announce, say: say, decorate: decorate, moving: 0 };

  function start(card) {
    dragged = card;
    dropped = false;
    origin = { list: card.parentNode, next: card.nextSibling };
    card.classList.add('dragging');
  }
  function end() {
    if (!dragged) return;
    dragged.classList.remove('dragging');
    if (!dropped) origin.list.insertBefore(dragged, origin.next);
    dragged = null;
  }
  /** Drops the dragged card into \`list\` where \`y\` falls, and asks the server to make the move. */
  function place(list, y) {
    dropped = true;
    var card = dragged;
    var next = cardAfter(list, y);
    var all = cards(list);
    var prev = next ? all[all.indexOf(next) - 1] : all[all.length - 1];
    var status = list.closest('.column').getAttribute('data-status');
    if (card.parentNode === list && card.nextElementSibling === next && card.previousElementSibling === (prev || \
null)) return;
    var from = { list: origin.list, next: origin.next };
    list.insertBefore(card, next);
    var form = card.querySelector('form.move');
    var body = new URLSearchParams();
    body.set('csrf', form.elements.csrf.value);
    body.set('to', 'place');
    body.set('status', status);
    if (prev) body.set('above', numberOf(prev));
    if (next) body.set('below', numberOf(next));
    window.shiplogBoard.moving++;
    fetch(form.action, { method: 'POST', body: body, credentials: 'same-origin', headers: { accept: \
'application/json' } })
      .then(function (res) {
        var said = 'Moved #' + numberOf(card) + ' to ' + status + '.';
        if (res.ok) return window.shiplogBoard.refresh(numberOf(card), said);
        return res.json().then(function (answer) { throw new Error(answer.message); }, function () { throw new \
Error('The card could not be moved.'); });
      })
      .catch(function (err) {
        from.list.insertBefore(card, from.next);
        say((err && err.message) || 'The card could not be moved.');
      })
      .then(function () { if (window.shiplogBoard.settled) window.shiplogBoard.settled(); });
  }

  board.addEventListener('dragstart', function (e) {
    var card = e.target.closest ? e.target.closest('li.card[data-number]') : null;
    if (!card) return;
    start(card);
    e.dataTransfer.effectAllowed = 'move';
    e.dataTransfer.setData('text/plain', '#' + numberOf(card));
  });
  board.addEventListener('dragover', function (e) {
    if (dragged && listAt(e.target)) e.preventDefault();
  });
  board.addEventListener('dragend', end);
  board.addEventListener('drop', function (e) {
    var list = listAt(e.target);
    if (!dragged || !list) return;
    e.preventDefault();
    place(list, e.clientY);
  });

  // Fingers and pens: a press on a grip picks the card up, the card under the finger is marked as
  // where it will go, and lifting the finger drops it there. Held near the top or bottom of the
  // screen, the finger scrolls the page (columns are stacked on a phone).
  var marked = null;
  var finger = null;
  var scrolling = false;
  function mark(list, y) {
    if (marked) marked.classList.remove('drop-before', 'drop-end');
    marked = null;
    if (!list) return;
    var next = cardAfter(list, y);
    marked = next || list;
    marked.classList.add(next ? 'drop-before' : 'drop-end');
  }
  function listUnder(point) { return listAt(document.elementFromPoint(point.x, point.y)); }
  function scrollNearEdge() {
    var edge = 56;
    var step = !dragged || !finger ? 0 : finger.y > window.innerHeight - edge ? 12 : finger.y < edge ? -12 : 0;
    if (step === 0) { scrolling = false; return; }
    window.scrollBy(0, step);
    mark(listUnder(finger), finger.y);
    requestAnimationFrame(scrollNearEdge);
  }
  board.addEventListener('pointerdown', function (e) {
    if (e.pointerType === 'mouse' || dragged || !e.target.closest || !e.target.closest('.grip')) return;
    var card = e.target.closest('li.card[data-number]');
    if (!card) return;
    e.preventDefault();
    start(card);
    board.setPointerCapture(e.pointerId);
  });
  board.addEventListener('pointermove', function (e) {
    if (!dragged || e.pointerType === 'mouse') return;
    finger = { x: e.clientX, y: e.clientY };
    mark(listUnder(finger), finger.y);
    if (!scrolling) { scrolling = true; requestAnimationFrame(scrollNearEdge); }
  });
  board.addEventListener('pointerup', function (e) {
    if (!dragged || e.pointerType === 'mouse') return;
    var list = listUnder({ x: e.clientX, y: e.clientY });
    mark(null);
    finger = null;
    if (list) place(list, e.clientY);
    end();
  });
  board.addEventListener('pointercancel', function (e) {
    if (e.pointerType === 'mouse') return;
    mark(null);
    finger = null;
    end();
  });
})();
`;
