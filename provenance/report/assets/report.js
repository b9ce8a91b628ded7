// prov report: a small dependency-free canvas plotter (line plots with a log or linear y axis,
// drag / wheel zoom on x shared by a group, double-click to reset), a layer x block heatmap
// and the tooltip of highlighted tokens. Reads the JSON embedded in #prov-data; fetches nothing.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("prov-data").textContent);
  var groups = {};

  function niceStep(span, target) {
    var raw = span / Math.max(target, 1), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  }
  function fmt(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e5 || a < 1e-3) return v.toExponential(1);
    return String(Math.round(v * 1000) / 1000);
  }
  function lowerBound(xs, x) {
    var lo = 0, hi = xs.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (xs[m] < x) lo = m + 1; else hi = m; }
    return lo;
  }

  function Plot(el, opt) {
    this.el = el; this.opt = opt;
    this.full = [opt.xmin, opt.xmax]; this.view = this.full.slice();
    this.canvas = document.createElement("canvas");
    this.readout = document.createElement("div");
    this.readout.className = "readout";
    el.appendChild(this.canvas); el.appendChild(this.readout);
    this.pad = {l: 64, r: 12, t: 10, b: 28};
    var g = opt.group || "default";
    (groups[g] = groups[g] || []).push(this);
    this.bind();
    this.draw();
  }
  Plot.prototype.setView = function (a, b) {
    var w = this.full[1] - this.full[0];
    a = Math.max(this.full[0], a); b = Math.min(this.full[1], b);
    if (b - a < Math.min(4, w)) return;
    (groups[this.opt.group || "default"] || [this]).forEach(function (p) {
      p.view = [a, b]; p.draw();
    });
  };
  Plot.prototype.px = function (x) {
    var w = this.W - this.pad.l - this.pad.r;
    return this.pad.l + (x - this.view[0]) / (this.view[1] - this.view[0]) * w;
  };
  Plot.prototype.xOf = function (px) {
    var w = this.W - this.pad.l - this.pad.r;
    return this.view[0] + (px - this.pad.l) / w * (this.view[1] - this.view[0]);
  };
  Plot.prototype.yRange = function () {
    var o = this.opt, lo = Infinity, hi = -Infinity, self = this;
    o.series.forEach(function (s) {
      var i0 = Math.max(lowerBound(s.x, self.view[0]) - 1, 0), i1 = lowerBound(s.x, self.view[1]) + 1;
      for (var i = i0; i < Math.min(i1, s.x.length); i++) {
        var v = s.y[i];
        if (v === null || !isFinite(v) || (o.log && v <= 0)) continue;
        if (v < lo) lo = v; if (v > hi) hi = v;
      }
    });
    if (o.ymin !== undefined) lo = o.ymin;
    if (o.ymax !== undefined) hi = o.ymax;
    if (!isFinite(lo)) { lo = o.log ? 1e-12 : 0; hi = 1; }
    if (o.log) { lo = Math.pow(10, Math.floor(Math.log10(lo))); hi = Math.pow(10, Math.ceil(Math.log10(hi))); if (hi <= lo) hi = lo * 10; }
    else if (hi <= lo) hi = lo + 1;
    return [lo, hi];
  };
  Plot.prototype.py = function (v) {
    var h = this.H - this.pad.t - this.pad.b, r = this.yr;
    var f = this.opt.log ? (Math.log10(Math.max(v, r[0])) - Math.log10(r[0])) / (Math.log10(r[1]) - Math.log10(r[0]))
                         : (v - r[0]) / (r[1] - r[0]);
    return this.pad.t + h * (1 - f);
  };
  Plot.prototype.draw = function () {
    var dpr = window.devicePixelRatio || 1, o = this.opt;
    this.W = this.el.clientWidth || 800; this.H = o.height || 220;
    this.canvas.width = this.W * dpr; this.canvas.height = this.H * dpr;
    this.canvas.style.width = this.W + "px"; this.canvas.style.height = this.H + "px";
    var c = this.canvas.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, this.W, this.H);
    this.yr = this.yRange();
    var p = this.pad, self = this, x0 = p.l, x1 = this.W - p.r, y0 = p.t, y1 = this.H - p.b;
    c.font = "11px sans-serif"; c.fillStyle = "#444"; c.strokeStyle = "#e3e3e3"; c.lineWidth = 1;
    // y grid: decades on a log axis
    var ticks = [];
    if (o.log) {
      for (var e = Math.log10(this.yr[0]); e <= Math.log10(this.yr[1]) + 1e-9; e++) ticks.push(Math.pow(10, e));
      var every = Math.ceil(ticks.length / 6);
      ticks = ticks.filter(function (_, i) { return i % every === 0; });
    } else {
      var st = niceStep(this.yr[1] - this.yr[0], 4);
      for (var t = Math.ceil(this.yr[0] / st) * st; t <= this.yr[1] + 1e-12; t += st) ticks.push(t);
    }
    c.textAlign = "right"; c.textBaseline = "middle";
    ticks.forEach(function (t) {
      var y = self.py(t); c.beginPath(); c.moveTo(x0, y); c.lineTo(x1, y); c.stroke();
      c.fillText(o.log ? "1e" + Math.round(Math.log10(t)) : fmt(t), x0 - 4, y);
    });
    var xs = niceStep(this.view[1] - this.view[0], Math.max(this.W / 110, 2));
    c.textAlign = "center"; c.textBaseline = "top";
    for (var xt = Math.ceil(this.view[0] / xs) * xs; xt <= this.view[1]; xt += xs) {
      var X = this.px(xt); c.beginPath(); c.moveTo(X, y0); c.lineTo(X, y1); c.stroke();
      c.fillText(fmt(xt), X, y1 + 4);
    }
    c.save(); c.beginPath(); c.rect(x0, y0, x1 - x0, y1 - y0); c.clip();
    // disagreement marks: a red tick per position along the bottom
    if (o.marks && o.marks.length) {
      c.strokeStyle = "rgba(200,30,30,0.7)";
      var m0 = lowerBound(o.marks, this.view[0]), m1 = lowerBound(o.marks, this.view[1] + 1);
      var last = -1;
      c.beginPath();
      for (var k = m0; k < m1; k++) {
        var mx = Math.round(this.px(o.marks[k]));
        if (mx === last) continue; last = mx;
        c.moveTo(mx + 0.5, y1); c.lineTo(mx + 0.5, y1 - 8);
      }
      c.stroke();
    }
    o.series.forEach(function (s) {
      var i0 = Math.max(lowerBound(s.x, self.view[0]) - 1, 0), i1 = Math.min(lowerBound(s.x, self.view[1]) + 1, s.x.length);
      c.strokeStyle = s.color; c.fillStyle = s.color; c.lineWidth = 1.2; c.beginPath();
      var started = false;
      for (var i = i0; i < i1; i++) {
        var v = s.y[i];
        if (v === null) { started = false; continue; }
        var X = self.px(s.x[i]), Y = self.py(v);
        if (!started) { c.moveTo(X, Y); started = true; } else c.lineTo(X, Y);
      }
      c.stroke();
      if (i1 - i0 < 300) for (var j = i0; j < i1; j++) if (s.y[j] !== null) c.fillRect(self.px(s.x[j]) - 1.5, self.py(s.y[j]) - 1.5, 3, 3);
    });
    if (this.sel) { c.fillStyle = "rgba(40,90,200,0.15)"; c.fillRect(Math.min(this.sel[0], this.sel[1]), y0, Math.abs(this.sel[1] - this.sel[0]), y1 - y0); }
    c.restore();
    c.strokeStyle = "#888"; c.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0, y1 - y0);
    this.el.setAttribute("data-rendered", "1");
    this.el.setAttribute("data-view", Math.round(this.view[0]) + "-" + Math.round(this.view[1]));
  };
  Plot.prototype.describe = function (x) {
    var parts = ["position " + Math.round(x)];
    this.opt.series.forEach(function (s) {
      var i = lowerBound(s.x, x);
      if (i > 0 && (i >= s.x.length || Math.abs(s.x[i - 1] - x) < Math.abs(s.x[i] - x))) i--;
      if (i < s.x.length && s.y[i] !== null) parts.push(s.name + " " + fmt(s.y[i]) + " @" + s.x[i]);
    });
    return parts.join("  ·  ");
  };
  Plot.prototype.bind = function () {
    var self = this, cv = this.canvas, down = null;
    function mx(ev) { var r = cv.getBoundingClientRect(); return ev.clientX - r.left; }
    cv.addEventListener("mousedown", function (ev) { down = mx(ev); self.sel = [down, down]; });
    cv.addEventListener("mousemove", function (ev) {
      var x = mx(ev);
      self.readout.textContent = self.describe(self.xOf(x));
      if (down !== null) { self.sel = [down, x]; self.draw(); }
    });
    window.addEventListener("mouseup", function (ev) {
      if (down === null) return;
      var a = self.xOf(Math.min(down, mx(ev))), b = self.xOf(Math.max(down, mx(ev)));
      down = null; self.sel = null;
      if (Math.abs(self.px(b) - self.px(a)) > 4) self.setView(a, b); else self.draw();
    });
    cv.addEventListener("dblclick", function () { self.setView(self.full[0], self.full[1]); });
    cv.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var x = self.xOf(mx(ev)), f = ev.deltaY > 0 ? 1.25 : 0.8;
      self.setView(x - (x - self.view[0]) * f, x + (self.view[1] - x) * f);
    }, {passive: false});
    window.addEventListener("resize", function () { self.draw(); });
  };

  function heatmap(el, h) {
    var cv = document.createElement("canvas"), out = document.createElement("div");
    out.className = "readout"; el.appendChild(cv); el.appendChild(out);
    var padL = 90, padT = 18, rows = h.layers.length, cols = h.blocks;
    var cw = Math.max(6, Math.min(40, ((el.clientWidth || 800) - padL - 10) / cols)), ch = 18;
    var dpr = window.devicePixelRatio || 1, W = padL + cw * cols + 10, H = padT + ch * rows + 4;
    cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + "px"; cv.style.height = H + "px";
    var c = cv.getContext("2d"); c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.font = "11px sans-serif"; c.textBaseline = "middle";
    for (var r = 0; r < rows; r++) {
      c.fillStyle = "#333"; c.textAlign = "right"; c.fillText(h.layers[r], padL - 6, padT + r * ch + ch / 2);
      for (var b = 0; b < cols; b++) {
        var v = h.values[r][b];
        if (v === undefined) continue;
        var f = v / h.max;
        c.fillStyle = v === 0 ? "#e8f3ea" : "rgba(200," + Math.round(120 - 100 * f) + ",40," + (0.35 + 0.65 * f) + ")";
        c.fillRect(padL + b * cw, padT + r * ch, cw - 1, ch - 1);
      }
    }
    c.fillStyle = "#333"; c.textAlign = "center";
    var every = Math.ceil(cols / 20);
    for (var bb = 0; bb < cols; bb += every) c.fillText(String(bb), padL + bb * cw + cw / 2, padT / 2);
    cv.addEventListener("mousemove", function (ev) {
      var rc = cv.getBoundingClientRect(), b = Math.floor((ev.clientX - rc.left - padL) / cw), r = Math.floor((ev.clientY - rc.top - padT) / ch);
      if (r < 0 || r >= rows || b < 0 || b >= cols) { out.textContent = ""; return; }
      out.textContent = h.layers[r] + ", block " + b + " (positions " + b * h.block + "–" + ((b + 1) * h.block - 1) + "): " +
        h.values[r][b] + " of " + h.max + " " + h.label;
    });
    el.setAttribute("data-rendered", "1");
  }

  function tooltips() {
    var tip = document.createElement("div"); tip.id = "tip"; document.body.appendChild(tip);
    var tips = D.tips || {};
    document.querySelectorAll(".hl").forEach(function (sp) {
      sp.addEventListener("mouseenter", function () {
        var t = tips[sp.getAttribute("data-p")];
        if (!t) return;
        tip.textContent = "position " + sp.getAttribute("data-p") + (t[0] ? " (agree)" : " (DISAGREE)") +
          "\nreference margin p1−p2: " + t[1] + "\nKL(ref‖cand): " + t[2] +
          "\nref top-1: " + JSON.stringify(t[3]) + "   cand top-1: " + JSON.stringify(t[4]) +
          "\nactual next: " + JSON.stringify(t[5]);
        var r = sp.getBoundingClientRect();
        tip.style.left = (r.left + window.scrollX) + "px"; tip.style.top = (r.bottom + window.scrollY + 4) + "px";
        tip.style.display = "block";
      });
      sp.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    });
  }

  var S = D.series;
  if (S) {
    new Plot(document.getElementById("plot-kl"), {
      xmin: 0, xmax: Math.max(S.n - 1, 1), log: true, height: 240, group: "ctx", marks: S.marks,
      series: [{name: "KL(ref‖cand)", x: S.kl.x, y: S.kl.ref_cand, color: "rgba(31,95,191,0.9)"},
               {name: "KL(cand‖ref)", x: S.kl.x, y: S.kl.cand_ref, color: "rgba(224,138,0,0.55)"}]});
    new Plot(document.getElementById("plot-dis"), {
      xmin: 0, xmax: Math.max(S.n - 1, 1), log: false, ymin: 0, height: 150, group: "ctx", marks: S.marks,
      series: [{name: "disagreement rate", x: S.rate.x, y: S.rate.y, color: "#c81e1e"}]});
  }
  if (D.heatmap) heatmap(document.getElementById("heatmap"), D.heatmap);
  tooltips();
})();
