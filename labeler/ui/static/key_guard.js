// The key guard of the task pages, injected once per page by labeler/key_guard.py, which
// fills in the three upper-case names below: the item buttons' and the note fields' CSS
// selectors, and the class of the handled-keys mark.
//
// The item buttons answer their own keys only: they are taken out of the Tab order, and Enter
// or Space on one of them (after a click focused it) does nothing. Tab in a note field leaves
// it for nowhere (the field loses focus and its text is kept), so the next key is an item key
// again and Enter or Space after Tab can never act on an item.
//
// An item key moves the page to another item in a run of the app, and that run also resets the
// note field to the new item's note. The browser applies that reset whenever it gets to it, so
// a note typed (and left with Tab) while the run is still on its way would be wiped by the late
// reset, and the next key would save the item without it. So every key pressed after an item
// key is held in the page, in order, until the page shows that key handled (the count drawn
// last in each run, the mark) and nothing runs: then the held keys are replayed, typing into
// the note, Tab leaving it, item keys pressing their buttons. Item keys always go through this
// queue (a button press, one at a time), never straight to Streamlit's own shortcut. A run can
// also end before the code of an element it drew has reached the browser (a placeholder stands
// where the buttons go): keys pressed then are held the same way until the buttons are there.
(function () {
  if (window.__goldpoolKeyGuard) { return; }
  window.__goldpoolKeyGuard = true;
  var picked = __BUTTONS__;
  var notes = __NOTES__;
  var mark = __MARK__;
  var queue = [];       // keys held while a run is on its way, oldest first
  var expected = null;  // handled-key count the page must show before held keys go on
  var virt = null;      // where the last held key leaves the focus: 'note' or 'page'
  var calm = 0, stalled = 0, timer = null;
  function untab() {
    document.querySelectorAll(picked).forEach(function (b) { if (b.tabIndex !== -1) { b.tabIndex = -1; } });
  }
  new MutationObserver(untab).observe(document.body, {childList: true, subtree: true});
  untab();
  function handled() {
    var m = document.querySelector('.' + mark + '[data-keys]');
    return m ? parseInt(m.getAttribute('data-keys'), 10) : null;
  }
  function running() {
    var a = document.querySelector('[data-testid="stApp"]');
    return !a || a.getAttribute('data-test-script-state') !== 'notRunning';
  }
  function drawing() {  // the run ended, but an element's code is still loading (a placeholder)
    return document.querySelector('[data-testid="stSkeleton"]') !== null;
  }
  function busy() {
    if (running()) { stalled = 0; return true; }
    var n = handled();  // no mark (a page that stopped on an error): nothing to wait for
    var behind = n !== null && expected !== null && n < expected;
    if (!behind && !drawing()) { stalled = 0; return false; }
    stalled += 1;  // the count never came (a new session after a reconnection): go on
    if (stalled > 200) { if (behind) { expected = n; } return false; }
    return true;
  }
  function button(key) {
    var want = 'Shortcut ' + key.toUpperCase();
    var found = null;
    document.querySelectorAll(picked).forEach(function (b) {
      if (!found && b.querySelector('[aria-label="' + want + '"]')) { found = b; }
    });
    return found;
  }
  function field(t) {
    return t && t.closest && (t.closest('input, textarea, select, [contenteditable="true"]') !== null);
  }
  function noteInput() { return document.querySelector(notes.split(', ').map(function (s) { return s + ' input'; }).join(', ')); }
  function place(t) {
    if (queue.length && virt) { return virt; }
    if (t && t.closest && t.closest(notes)) { return 'note'; }
    return field(t) ? 'field' : 'page';
  }
  var editing = {Backspace: 1, Delete: 1, Enter: 1, Tab: 1, ArrowLeft: 1, ArrowRight: 1, Home: 1, End: 1};
  function plain(e) { return !(e.ctrlKey || e.metaKey || e.altKey); }
  function sent() {  // an item key went to the server: what follows waits until it is handled
    var n = handled();
    expected = Math.max(expected === null ? 0 : expected, n === null ? 0 : n) + 1;
  }
  function press(b) { sent(); b.click(); }
  function leave(input) { input.blur(); }
  function replay(h) {
    if (h.kind === 'item') {
      var b = button(h.key);
      if (b) { press(b); return true; }
      return false;  // no button answers it here any more (e.g. nothing left): nothing to do
    }
    var input = noteInput();
    if (!input) { return false; }
    if (document.activeElement !== input) { input.focus(); }
    var at = input.selectionStart, end = input.value.length;
    if (h.text !== undefined) { document.execCommand('insertText', false, h.text); }
    else if (h.key === 'Backspace') { document.execCommand('delete'); }
    else if (h.key === 'Delete') { document.execCommand('forwardDelete'); }
    else if (h.key === 'ArrowLeft') { input.setSelectionRange(Math.max(0, at - 1), Math.max(0, at - 1)); }
    else if (h.key === 'ArrowRight') { input.setSelectionRange(Math.min(end, at + 1), Math.min(end, at + 1)); }
    else if (h.key === 'Home') { input.setSelectionRange(0, 0); }
    else if (h.key === 'End') { input.setSelectionRange(end, end); }
    else if (h.key === 'Enter') {
      input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', code: 'Enter', bubbles: true, cancelable: true}));
      return true;
    } else if (h.key === 'Tab') { leave(input); return true; }
    else { document.execCommand('insertText', false, h.key); }
    return false;
  }
  function pump() {
    timer = null;
    calm = busy() ? 0 : calm + 1;
    // Two calm looks 40 ms apart: the page has also applied what the run set (the note's reset).
    while (queue.length && calm >= 2) {
      try { if (replay(queue.shift())) { calm = 0; } } catch (err) { calm = 0; }
    }
    if (!queue.length) { virt = null; return; }
    timer = setTimeout(pump, 40);
  }
  function hold(h) {
    queue.push(h);
    if (timer === null) { timer = setTimeout(pump, 0); }
  }
  window.addEventListener('keydown', function (e) {
    if (e.isComposing || !plain(e)) { return; }
    var where = place(e.target);
    if (where === 'note') {
      if (!(queue.length || busy())) { return; }
      if (e.key.length !== 1 && !editing[e.key]) { return; }
      e.preventDefault(); e.stopImmediatePropagation();
      hold({kind: 'note', key: e.key});
      virt = e.key === 'Tab' ? 'page' : 'note';
      return;
    }
    if (where !== 'page' || e.shiftKey || e.key.length !== 1) { return; }
    if (!button(e.key) && !drawing()) { return; }  // while elements still draw, its button may yet come
    e.preventDefault(); e.stopImmediatePropagation();
    if (!queue.length && !busy()) { replay({kind: 'item', key: e.key}); return; }
    hold({kind: 'item', key: e.key});
    virt = 'page';
  }, true);
  window.addEventListener('paste', function (e) {
    if (place(e.target) !== 'note' || !(queue.length || busy())) { return; }
    e.preventDefault(); e.stopImmediatePropagation();
    hold({kind: 'note', text: (e.clipboardData && e.clipboardData.getData('text')) || ''});
    virt = 'note';
  }, true);
  document.addEventListener('focusin', function (e) {
    if (e.isTrusted && queue.length) { virt = e.target.closest && e.target.closest(notes) ? 'note' : 'page'; }
  }, true);
  document.addEventListener('click', function (e) {  // a click on an item button counts like its key
    if (e.isTrusted && e.target && e.target.closest && e.target.closest(picked)) { sent(); }
  }, true);
  function block(e) {
    if ((e.key === 'Enter' || e.key === ' ' || e.key === 'Spacebar') && e.target && e.target.closest
        && e.target.closest(picked)) { e.preventDefault(); e.stopImmediatePropagation(); }
  }
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Tab' && !e.shiftKey && e.target && e.target.closest && e.target.closest(notes)) {
      e.preventDefault(); leave(e.target);
    }
  }, true);
  document.addEventListener('keydown', block, true);
  document.addEventListener('keyup', block, true);
  document.addEventListener('keypress', block, true);
})();
