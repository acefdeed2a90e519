// sbx tracing for Node (docs/observe.md "Tracing"): loaded by NODE_OPTIONS=--require in
// every node of a traced run, children included. It wraps the fs, child_process, net and
// dns entry points and writes one JSON line per event to the run's event FIFO, opened once
// here and written with fs.writeSync. It observes; it is no fence: a program can undo it.
'use strict';
(() => {
  const fifo = process.env.SBX_TRACE;
  if (!fifo) return;
  const fs = require('fs');
  const path = require('path');
  let fd;
  try {
    fd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  } catch {
    return;
  }
  let busy = false;
  const emit = (ev) => {
    if (busy) return;
    busy = true;
    try {
      ev.t = Date.now();
      ev.pid = process.pid;
      const line = JSON.stringify(ev) + '\n';
      if (Buffer.byteLength(line) <= 4096) fs.writeSync(fd, line);
    } catch {
      // a full FIFO loses the event, never the program
    } finally {
      busy = false;
    }
  };
  const here = __dirname + '/';
  const quiet = ['/usr/', '/lib/', '/lib32/', '/lib64/', '/etc/ld.so.cache', '/etc/ssl/', '/proc/', '/sys/', '/dev/', here];
  const { O_WRONLY, O_RDWR, O_CREAT, O_APPEND, O_TRUNC } = fs.constants;
  const writes = (flags) => typeof flags === 'number'
    ? (flags & (O_WRONLY | O_RDWR | O_CREAT | O_APPEND | O_TRUNC)) !== 0
    : /[wa+]/.test(String(flags ?? 'r'));
  const fileEvent = (p, flags) => {
    if (busy) return;
    try {
      if (typeof p === 'number' || p === undefined || p === null) return;
      if (typeof p === 'object' && !(p instanceof URL) && !Buffer.isBuffer(p)) return; // a FileHandle
      const s = path.resolve(p instanceof URL ? p.pathname : String(p));
      const w = writes(flags);
      if (!w && (quiet.some((q) => s.startsWith(q)) || /\/\.sbx\/run_[a-z0-9]+\.js$/.test(s))) return;
      emit({ kind: w ? 'write' : 'read', path: s });
    } catch {
      // never let the shim break the program
    }
  };
  const wrap = (obj, name, before) => {
    const orig = obj && obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = function (...args) {
      before(args);
      return orig.apply(this, args);
    };
  };
  // one event per call: an fs function that calls another (readFileSync -> openSync in some
  // versions) reports once, from the outer call
  let depth = 0;
  const wrapFs = (obj, name, before) => {
    const orig = obj && obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = function (...args) {
      if (depth === 0) before(args);
      depth++;
      try {
        return orig.apply(this, args);
      } finally {
        depth--;
      }
    };
  };
  // open(path, flags): flags; readFile(path, options) and the like: a string is an
  // encoding, the flag is options.flag (streams: options.flags)
  const flagArg = (v, dflt) => (typeof v === 'function' || v === undefined || v === null ? dflt : v);
  const optFlag = (v, dflt) => (typeof v === 'object' && v !== null ? v.flag ?? v.flags ?? dflt : dflt);
  wrapFs(fs, 'openSync', (a) => fileEvent(a[0], a[1] ?? 'r'));
  wrapFs(fs, 'open', (a) => fileEvent(a[0], flagArg(a[1], 'r')));
  wrapFs(fs, 'readFile', (a) => fileEvent(a[0], optFlag(a[1], 'r')));
  wrapFs(fs, 'writeFile', (a) => fileEvent(a[0], optFlag(a[2], 'w')));
  wrapFs(fs, 'appendFile', (a) => fileEvent(a[0], optFlag(a[2], 'a')));
  wrapFs(fs, 'createReadStream', (a) => fileEvent(a[0], optFlag(a[1], 'r')));
  wrapFs(fs, 'createWriteStream', (a) => fileEvent(a[0], optFlag(a[1], 'w')));
  wrapFs(fs.promises, 'open', (a) => fileEvent(a[0], a[1] ?? 'r'));
  wrapFs(fs.promises, 'readFile', (a) => fileEvent(a[0], optFlag(a[1], 'r')));
  wrapFs(fs.promises, 'writeFile', (a) => fileEvent(a[0], optFlag(a[2], 'w')));
  wrapFs(fs.promises, 'appendFile', (a) => fileEvent(a[0], optFlag(a[2], 'a')));
  wrapFs(fs, 'readFileSync', (a) => fileEvent(a[0], optFlag(a[1], 'r')));
  wrapFs(fs, 'writeFileSync', (a) => fileEvent(a[0], optFlag(a[2], 'w')));
  wrapFs(fs, 'appendFileSync', (a) => fileEvent(a[0], optFlag(a[2], 'a')));

  const cp = require('child_process');
  const spawnEvent = (file, args) => emit({ kind: 'spawn', argv: [file, ...(Array.isArray(args) ? args : [])].map(String) });
  wrap(cp.ChildProcess.prototype, 'spawn', (a) => {
    const o = a[0] || {};
    emit({ kind: 'spawn', argv: (Array.isArray(o.args) && o.args.length ? o.args : [o.file]).map(String) });
  });
  wrap(cp, 'spawnSync', (a) => spawnEvent(a[0], a[1]));
  wrap(cp, 'execFileSync', (a) => spawnEvent(a[0], a[1]));
  wrap(cp, 'execSync', (a) => emit({ kind: 'spawn', argv: ['/bin/sh', '-c', String(a[0])] }));

  const net = require('net');
  wrap(net.Socket.prototype, 'connect', (a) => {
    let o = a[0];
    if (Array.isArray(o)) o = o[0];
    if (o && typeof o === 'object') {
      if (o.path) emit({ kind: 'connect', path: String(o.path) });
      else if (o.port !== undefined) emit({ kind: 'connect', host: String(o.host ?? 'localhost'), port: Number(o.port) });
    } else if (o !== undefined) {
      emit({ kind: 'connect', host: typeof a[1] === 'string' ? a[1] : 'localhost', port: Number(o) });
    }
  });
  const dns = require('dns');
  wrap(dns, 'lookup', (a) => emit({ kind: 'lookup', host: String(a[0]), port: 0 }));
  wrap(dns.promises, 'lookup', (a) => emit({ kind: 'lookup', host: String(a[0]), port: 0 }));
})();
