-- agentchat.web_assets: the style sheet and the script of the page of
-- `agent-chat serve` (docs/web.md), compiled into the binary with the Lua
-- modules (no CDN, no build step). The script only makes the page live:
-- everything it shows is rendered by the server (agentchat.web), so the
-- page works without it.
--
-- app.js: opens the channel's event stream (EventSource, which reconnects
-- by itself and sends Last-Event-ID), appends each new message's server-
-- rendered HTML to the timeline, marks a request answered when its response
-- arrives, refreshes the task board, locks, team strip and channel list
-- after a message (one fetch each, at most every 300 ms), and counts the
-- lease and lock expiries down every second. It inserts only HTML the
-- server escaped (agentchat.web), never a value of its own.
local M = {}

M.types = {
  ["app.js"] = "text/javascript; charset=utf-8",
  ["app.css"] = "text/css; charset=utf-8",
}

M["app.js"] = [==[
(function () {
  'use strict';
  var body = document.body;
  var channel = body.getAttribute('data-channel');
  var token = body.getAttribute('data-token') || '';
  var live = document.getElementById('live');

  function withToken(url) {
    if (!token) { return url; }
    return url + (url.indexOf('?') < 0 ? '?' : '&') + 'token=' + encodeURIComponent(token);
  }

  function duration(s) {
    s = Math.floor(s);
    function pad(n) { return (n < 10 ? '0' : '') + n; }
    if (s < 60) { return s + 's'; }
    if (s < 3600) { return Math.floor(s / 60) + 'm ' + pad(s % 60) + 's'; }
    if (s < 86400) { return Math.floor(s / 3600) + 'h ' + pad(Math.floor(s % 3600 / 60)) + 'm'; }
    return Math.floor(s / 86400) + 'd ' + Math.floor(s % 86400 / 3600) + 'h';
  }

  function tick() {
    var now = Date.now() / 1000;
    var els = document.querySelectorAll('[data-expires]');
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var left = Number(el.getAttribute('data-expires')) - now;
      var what = el.getAttribute('data-what') || 'expires';
      el.textContent = left > 0 ? what + ' in ' + duration(left) : what + ' ' + duration(-left) + ' ago';
      el.classList.toggle('expired', left <= 0);
    }
  }
  tick();
  setInterval(tick, 1000);

  if (!channel || !window.EventSource) { return; }
  var base = '/c/' + encodeURIComponent(channel) + '/fragment/';
  var timeline = document.getElementById('timeline');

  function replace(id, url) {
    fetch(withToken(url), { credentials: 'same-origin' }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      var el = document.getElementById(id);
      if (html !== null && el) { el.innerHTML = html; tick(); }
    }).catch(function () {});
  }

  var pending = null;
  function refreshPanels() {
    if (pending) { return; }
    pending = setTimeout(function () {
      pending = null;
      replace('board', base + 'board');
      replace('locks', base + 'locks');
      replace('team', base + 'team');
      replace('channels', '/fragment/channels?current=' + encodeURIComponent(channel));
    }, 300);
  }

  var last = body.getAttribute('data-last-seq') || '0';
  var es = new EventSource(withToken('/api/channels/' + encodeURIComponent(channel) + '/events?after=' + last));
  es.addEventListener('open', function () {
    if (live) { live.textContent = 'live'; live.className = 'live on'; }
  });
  es.addEventListener('error', function () {
    if (live) { live.textContent = 'reconnecting'; live.className = 'live off'; }
  });
  es.addEventListener('reset', function () { window.location.reload(); });
  es.addEventListener('message', function (e) {
    var m;
    try { m = JSON.parse(e.data); } catch (err) { return; }
    if (!m || typeof m.seq !== 'number' || document.getElementById('m-' + m.seq)) { return; }
    timeline.insertAdjacentHTML('beforeend', m.html);
    body.setAttribute('data-last-seq', String(m.seq));
    var msg = m.message || {};
    if (msg.request_id && /_response$/.test(msg.type || '')) {
      var reqs = document.querySelectorAll('[data-request]');
      for (var i = 0; i < reqs.length; i++) {
        if (reqs[i].getAttribute('data-request') === msg.request_id) {
          reqs[i].classList.add('answered');
          var w = reqs[i].querySelector('.waiting');
          if (w) { w.textContent = 'answered by #' + m.seq; w.className = 'badge answered'; }
        }
      }
    }
    var el = document.getElementById('m-' + m.seq);
    if (el && window.scrollY + window.innerHeight >= document.body.scrollHeight - el.offsetHeight - 80) {
      el.scrollIntoView({ block: 'end' });
    }
    refreshPanels();
  });
})();
]==]

M["app.css"] = [==[
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330;
  background: #f4f5f8; display: flex; min-height: 100vh; }
nav { width: 220px; flex: none; background: #1f2533; color: #d7dbe5; padding: 12px; }
nav a { color: #fff; text-decoration: none; }
.brand { font-weight: 700; font-size: 16px; margin: 0 0 2px; }
.root { font-size: 11px; color: #8b93a7; word-break: break-all; margin: 0 0 12px; }
.channels { list-style: none; padding: 0; margin: 0; }
.channels li { padding: 6px 8px; border-radius: 6px; margin-bottom: 4px; }
.channels li.current { background: #343c50; }
.channels .count { float: right; color: #8b93a7; }
.unreads { font-size: 11px; color: #8b93a7; }
.unread.some { color: #ffd479; font-weight: 600; }
.view { flex: 1; padding: 12px 18px; min-width: 0; }
header.chan { display: flex; align-items: baseline; gap: 12px; }
header.chan h1 { margin: 0; font-size: 20px; }
.topic { margin: 0; color: #5b6478; flex: 1; }
.live { font-size: 11px; padding: 2px 8px; border-radius: 10px; background: #ccd; }
.live.on { background: #2e9d5b; color: #fff; }
.live.off { background: #c77a1d; color: #fff; }
.team { list-style: none; display: flex; flex-wrap: wrap; gap: 6px; padding: 0; margin: 10px 0; }
.member { background: #fff; border: 1px solid #dde0e8; border-radius: 14px; padding: 2px 10px; font-size: 12px; }
.member .name { font-weight: 600; }
.member .lifecycle, .member .age, .member .mstatus { color: #6b7385; }
.member.working { border-color: #2e9d5b; }
.member.shutdown { opacity: .6; }
.member.silent { border-color: #c77a1d; background: #fff7ea; }
.cols { display: flex; gap: 16px; align-items: flex-start; }
main { flex: 1; min-width: 0; }
aside { width: 340px; flex: none; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .05em; color: #6b7385; margin: 12px 0 6px; }
.msg { background: #fff; border: 1px solid #dde0e8; border-radius: 8px; padding: 8px 12px; margin-bottom: 8px; }
.msg header { font-size: 12px; color: #6b7385; }
.msg .from, .msg .to { font-weight: 600; color: #1d2330; }
.msg .seq { color: #6b7385; text-decoration: none; }
.msg .title { font-size: 14px; margin: 4px 0; }
.msg .file { font-size: 11px; color: #9aa1b1; }
.msg .body { overflow-wrap: anywhere; }
.msg .body pre { background: #f4f5f8; padding: 6px 8px; border-radius: 4px; overflow-x: auto; }
.msg .body code { background: #f0f1f5; padding: 0 3px; border-radius: 3px; }
.msg .body blockquote { border-left: 3px solid #ccd; margin: 4px 0; padding-left: 8px; color: #5b6478; }
.msg.event { background: #f7f9ff; padding: 4px 12px; font-size: 12px; }
details.audit { background: #f7f7f9; padding: 4px 12px; font-size: 12px; }
details.audit pre { font-size: 11px; overflow-x: auto; }
.badge { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #e5e8f0; color: #39425a;
  text-decoration: none; }
.badge.waiting { background: #fff0d6; }
.badge.answered, .badge.answers { background: #dcf3e5; }
.badge.warn { background: #fde1e1; }
.board { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.column { background: #fff; border: 1px solid #dde0e8; border-radius: 8px; padding: 6px 8px; }
.column h3 { margin: 0 0 4px; font-size: 12px; text-transform: capitalize; }
.column ul, .locks { list-style: none; padding: 0; margin: 0; }
.task, .lock { font-size: 12px; padding: 4px 0; border-top: 1px solid #eef0f4; }
.tid { font-family: ui-monospace, monospace; color: #6b7385; }
.owner { font-weight: 600; }
.countdown { display: block; color: #2e6d9d; font-size: 11px; }
.countdown.expired { color: #b33; }
.none { color: #8b93a7; }
@media (max-width: 900px) { body { display: block; } nav { width: auto; } .cols { display: block; }
  aside { width: auto; } }
]==]

return M
