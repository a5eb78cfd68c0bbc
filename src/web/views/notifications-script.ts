/**
 * The notifications page's script (`/app/notifications.js`). It only adds to a form that works
 * without it: ticking an environment or typing one chooses "Only these" (the server reads the form
 * so anyway), choosing "All" unticks the boxes and sets the typed names aside (kept on screen, not
 * sent), and a typed name no deploy of the product went to is pointed out next to the field as it
 * is typed. Plain ES5, nothing to build.
 */
export const NOTIFICATIONS_SCRIPT = `(function () {
  'use strict';
  var form = document.querySelector('form.notifications');
  var other = document.getElementById('other-environments');
  var warning = document.getElementById('environments-warning');
  if (!form || !other || !warning) return;
  var all = form.querySelector('input[name=choice][value=all]');
  var some = form.querySelector('input[name=choice][value=some]');
  var boxes = form.querySelectorAll('input[name=environments]');
  var known = [];
  try { known = JSON.parse(other.getAttribute('data-known') || '[]'); } catch (e) { known = []; }
  function chooseSome() {
    if (some && !some.checked) some.checked = true;
    other.disabled = false;
  }
  function flag() {
    var unknown = [];
    var names = other.value.split(',');
    for (var i = 0; i < names.length; i++) {
      var name = names[i].replace(/^\\s+|\\s+$/g, '');
      if (name && known.indexOf(name) < 0 && unknown.indexOf(name) < 0) unknown.push(name);
    }
    warning.textContent = unknown.length
      ? 'Nothing has been deployed to ' + unknown.join(', ') + ' yet: check the spelling (case counts).'
      : '';
  }
  for (var i = 0; i < boxes.length; i++) {
    boxes[i].addEventListener('change', function (e) { if (e.target.checked) chooseSome(); });
  }
  other.addEventListener('input', function () {
    if (other.value.replace(/\\s/g, '')) chooseSome();
    flag();
  });
  if (some) some.addEventListener('change', function () { other.disabled = false; });
  if (all) all.addEventListener('change', function () {
    if (!all.checked) return;
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = false;
    other.disabled = true;
  });
  if (all && all.checked) other.disabled = !other.value.replace(/\\s/g, '') ? true : false;
  flag();
})();
`;
