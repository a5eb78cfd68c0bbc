/**
 * The one script of the pages (`/app/board.js`), served by Shiplog itself: it lets a card of the
 * board be dragged to another place in its column or into another column. It only adds to the
 * page: a drop sends the card's own move form (its form token and action) with `to=place`, the
 * column's status and the cards it now sits between, and the server makes the same change as the
 * buttons do. Without it (or without JavaScript) the buttons and the status select still work.
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
    return Array.prototype.filter.call(list.children, function (c) { return c.classList.contains('card') && c !== dragged; });
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

  Array.prototype.forEach.call(board.querySelectorAll('li.card[data-number]'), function (card) { card.draggable = true; });
  board.classList.add('draggable');

  board.addEventListener('dragstart', function (e) {
    var card = e.target.closest ? e.target.closest('li.card[data-number]') : null;
    if (!card) return;
    dragged = card;
    dropped = false;
    origin = { list: card.parentNode, next: card.nextSibling };
    card.classList.add('dragging');
    e.dataTransfer.effectAllowed = 'move';
    e.dataTransfer.setData('text/plain', '#' + numberOf(card));
  });
  board.addEventListener('dragover', function (e) {
    if (dragged && listAt(e.target)) e.preventDefault();
  });
  board.addEventListener('dragend', function () {
    if (!dragged) return;
    dragged.classList.remove('dragging');
    if (!dropped) origin.list.insertBefore(dragged, origin.next);
    dragged = null;
  });
  board.addEventListener('drop', function (e) {
    var list = listAt(e.target);
    if (!dragged || !list) return;
    e.preventDefault();
    dropped = true;
    var card = dragged;
    var next = cardAfter(list, e.clientY);
    var all = cards(list);
    var prev = next ? all[all.indexOf(next) - 1] : all[all.length - 1];
    var status = list.closest('.column').getAttribute('data-status');
    if (card.parentNode === list && card.nextElementSibling === next && card.previousElementSibling === (prev || null)) return;
    var from = { list: origin.list, next: origin.next };
    list.insertBefore(card, next);
    var form = card.querySelector('form.move');
    var body = new URLSearchParams();
    body.set('csrf', form.elements.csrf.value);
    body.set('to', 'place');
    body.set('status', status);
    if (prev) body.set('above', numberOf(prev));
    if (next) body.set('below', numberOf(next));
    fetch(form.action, { method: 'POST', body: body, credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (res) {
        if (res.ok) return location.reload();
        return res.json().then(function (answer) { throw new Error(answer.message); }, function () { throw new Error('The card could not be moved.'); });
      })
      .catch(function (err) {
        from.list.insertBefore(card, from.next);
        say((err && err.message) || 'The card could not be moved.');
      });
  });
})();
`;
