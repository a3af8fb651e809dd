/// The timeline of one run: an inline SVG with one lane per actor (producer, each consumer process in the
/// order they started, Valkey, PostgreSQL, the sink when consumers called one; for an HTTP run: the client, each server process, PostgreSQL, with
/// each request drawn from the client to its server and each answer back) and one row per op of the history, in history order (the
/// vertical axis is the order of ops, not a time scale: the time of each op is written beside it). A
/// step is a mark on its process's lane joined to the lane of the server it went to; the kill is a red
/// cross on a red row; a hold is a pause sign where it fired, an orange bar down its process's lane while
/// it held, and a play sign where it was released (a pause, its process stopped meanwhile, the same with a
/// dashed bar); a call the sink received is a mark on the sink's lane (filled: executed, hollow: replayed, a
/// square: refused as a mismatch or not the declared call) joined by a dotted line to the CALL step that
/// carried it; the ops the violations cite (and every send, delivery
/// and ack of their entries) are highlighted; a text column says what each op was.
#include "report/html_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace idem::html {

namespace {

// Declarations, not a directive: in a unity batch a directive here would reach every later file of the
// batch through namespace html (report/html.cc and junit.cc use it), where tl::Row clashes with idem::Row.
using tl::Context;
using tl::contextOf;
using tl::describe;
using tl::kHeadH;
using tl::kRowH;
using tl::kTimeW;
using tl::rowsOf;

/// An HTTP request (client to server) or its answer (server to client); an answer that never came is a
/// short dashed stub.
void drawHttp(std::string& out, const Context& c, const Op& op, int y) {
  const auto* r = op.as<ops::Request>();
  const auto* a = op.as<ops::Response>();
  int cx = c.x("client");
  auto it = c.requestServer.find(r ? r->id : a->id);
  int sx = it == c.requestServer.end() ? -1 : c.x(it->second);
  if (cx < 0 || sx < 0) return;
  if (r) {
    out += fmt::format("<line class=\"call send\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", cx, y, sx, y);
    out += fmt::format("<circle class=\"mark send\" cx=\"{}\" cy=\"{}\" r=\"5\"/>", cx, y);
    out += fmt::format("<circle class=\"srv pg\" cx=\"{}\" cy=\"{}\" r=\"3\"/>", sx, y);
    return;
  }
  bool answered = a->final();
  int end = answered ? cx : sx - (sx - cx) / 3;
  out += fmt::format("<line class=\"call send{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", answered ? "" : " withheld",
                     sx, y, end, y);
  if (answered) out += fmt::format("<path class=\"srv send\" d=\"M{} {}l9 -5v10z\"/>", cx, y);
}

/// A call the sink received: a mark on the sink's lane, by what the sink did (executed: filled; replayed:
/// hollow; mismatch, rejected: a square).
void drawCall(std::string& out, const Context& c, const ops::Call& k, int y) {
  int sx = c.x("sink");
  if (sx < 0) return;
  const std::string cls = k.outcome == "executed" || k.outcome == "replayed" ? k.outcome : "refused";
  if (cls == "refused")
    out += fmt::format("<rect class=\"sinkcall refused\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\"/>", sx - 5, y - 5);
  else
    out += fmt::format("<circle class=\"sinkcall {}\" cx=\"{}\" cy=\"{}\" r=\"6\"/>", cls, sx, y);
}

/// Each call record joined to the CALL step that carried it: a dotted line down the sink's lane, from the
/// record's row to the step's (the step ends after the sink decided), when both rows are shown.
void drawCallLinks(std::string& out, const Context& c, const std::vector<tl::Row>& rows, int (*rowY)(size_t)) {
  int sx = c.x("sink");
  if (sx < 0) return;
  std::map<int64_t, size_t> rowOf;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].op) rowOf[rows[i].op->index] = i;
  for (const auto& [call, step] : c.callSteps) {
    auto a = rowOf.find(call), b = rowOf.find(step);
    if (a == rowOf.end() || b == rowOf.end()) continue;
    out += fmt::format("<line class=\"calllink\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", sx + 9, rowY(a->second),
                       sx + 9, rowY(b->second));
  }
}

void drawMarks(std::string& out, const Context& c, const Op& op, int y) {
  if (op.as<ops::Request>() || op.as<ops::Response>()) return drawHttp(out, c, op, y);
  if (const auto* k = op.as<ops::Call>()) return drawCall(out, c, *k, y);
  const auto* send = op.as<ops::Send>();
  const auto* step = op.as<ops::Step>();
  int px = c.x(send ? "producer" : op.process);
  if (px < 0) return;
  if (send || step) {
    std::string server = send ? "valkey" : step->server;
    const bool dead = step && c.deadLetterOps.count(op.index) > 0; // a write to the dead letter
    const bool sink = step && server == "sink"; // a call of the provider idemproof plays
    int sx = c.x(dead ? "dead-letter" : sink ? "sink" : server == "pg" ? "pg" : "valkey");
    std::string cls = send ? "send" : dead ? "dead" : sink ? "sink" : (server == "pg" ? "pg" : "valkey");
    bool withheld = step && (step->outcome == ops::StepOutcome::KilledBefore ||
                             step->outcome == ops::StepOutcome::DroppedBefore ||
                             step->outcome == ops::StepOutcome::Withheld || step->outcome == ops::StepOutcome::Answered);
    int end = withheld ? px + (sx - px) / 3 : sx;
    out += fmt::format("<line class=\"call {}{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", cls,
                       withheld ? " withheld" : "", px, y, end, y);
    if (!withheld) out += fmt::format("<circle class=\"srv {}\" cx=\"{}\" cy=\"{}\" r=\"3\"/>", cls, sx, y);
    if (send) out += fmt::format("<circle class=\"mark send\" cx=\"{}\" cy=\"{}\" r=\"5\"/>", px, y);
    else out += fmt::format("<rect class=\"mark {}\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" rx=\"2\"/>", cls, px - 5, y - 5);
  } else if (op.as<ops::Spawn>()) {
    out += fmt::format("<circle class=\"spawn\" cx=\"{}\" cy=\"{}\" r=\"6\"/>", px, y);
  } else if (c.firedAt(op.index)) { // a pause sign: two bars
    out += fmt::format("<g class=\"hold\"><rect x=\"{}\" y=\"{}\" width=\"4\" height=\"12\" rx=\"1\"/>"
                       "<rect x=\"{}\" y=\"{}\" width=\"4\" height=\"12\" rx=\"1\"/></g>",
                       px - 6, y - 6, px + 2, y - 6);
  } else if (const auto* f = op.as<ops::FaultOp>()) {
    if (f->fault.isKill())
      out += fmt::format("<path class=\"kill\" d=\"M{} {}l14 14M{} {}l-14 14\"/>", px - 7, y - 7, px + 7, y - 7);
    else
      out += fmt::format("<path class=\"kill\" d=\"M{} {}l7 14l7 -14z\"/>", px - 7, y - 7);
  } else if (op.as<ops::Exit>()) {
    out += fmt::format("<line class=\"exit\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", px - 9, y, px + 9, y);
  }
  // A release: a play sign on the lane (left of it when the row is the held step's own, a timed hold's end).
  if (c.releasedAt(op.index)) {
    int rx = step ? px - 20 : px - 5;
    out += fmt::format("<path class=\"release\" d=\"M{} {}l11 6l-11 6z\"/>", rx, y - 6);
  }
}

/// The bars of the holds: on the held process's lane, from the row where the hold fired to the row where it
/// was released (or the process's last row shown, when it never was).
void drawHolds(std::string& out, const Context& c, const std::vector<tl::Row>& rows, int (*rowY)(size_t)) {
  for (const HoldSpan& h : c.holds) {
    int px = c.x(h.process);
    std::optional<size_t> from, to;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].op) continue;
      int64_t at = rows[i].op->index;
      if (at == h.fired) from = i;
      if (from && !to && h.released >= 0 && at >= h.released) to = i;
      if (from && h.released < 0 && rows[i].op->process == h.process) to = i;
    }
    if (px < 0 || !from || !to || *to <= *from) continue;
    out += fmt::format("<rect class=\"held{}\" x=\"{}\" y=\"{}\" width=\"10\" height=\"{}\" rx=\"3\"/>",
                       h.pause ? " paused" : "", px - 5, rowY(*from), rowY(*to) - rowY(*from));
  }
}

} // namespace

std::string timeline(const json& run) {
  // The history as typed ops (history/history.h): the one reading of op JSON.
  std::vector<Op> history;
  try {
    history = arr(run, "history").get<std::vector<Op>>();
  } catch (const std::exception& e) {
    return fmt::format("<p class=\"note\">The history of this run could not be read: {}</p>", esc(cut(e.what(), 300)));
  }
  Context c = contextOf(run, history);
  std::vector<tl::Row> rows = rowsOf(c, history);
  int width = c.textX() + c.textW(), height = kHeadH + static_cast<int>(rows.size()) * kRowH + 8;
  std::string out = fmt::format("<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                "viewBox=\"0 0 {} {}\" role=\"img\">",
                                width, height, width, height);
  int (*rowY)(size_t) = [](size_t i) { return kHeadH + static_cast<int>(i) * kRowH + kRowH / 2; };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].hot || rows[i].kill || rows[i].hold)
      out += fmt::format("<rect class=\"{}\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                         rows[i].kill ? "killrow" : rows[i].hot ? "hotrow" : "holdrow", rowY(i) - kRowH / 2, width, kRowH);
  }
  // Lanes: names, server lines over the whole height, process lines from start to exit.
  for (const auto& lane : c.lanes) {
    int x = c.x(lane);
    std::string label = lane == "pg" ? "PostgreSQL" : lane == "valkey" ? c.brokerTitle : lane == "dead-letter" ? "Dead letter"
                        : lane == "sink" ? "Sink" : cut(lane, 9);
    bool server = lane == "pg" || lane == "valkey" || lane == "dead-letter" || lane == "sink";
    out += fmt::format("<text class=\"lane{}\" x=\"{}\" y=\"20\">{}</text>", server ? " server" : "", x, esc(label));
    int y0 = kHeadH, y1 = height - 6;
    if (!server) {
      bool seen = false;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (!rows[i].op) continue;
        bool mine = rows[i].op->as<ops::Send>() ? lane == "producer" : rows[i].op->process == lane;
        if (!mine) continue;
        if (!seen) y0 = rowY(i);
        seen = true;
        y1 = rowY(i);
      }
      if (!seen) continue;
    }
    out += fmt::format("<line class=\"life{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", server ? " server" : "", x, y0, x, y1);
  }
  drawHolds(out, c, rows, rowY);
  drawCallLinks(out, c, rows, rowY);
  for (size_t i = 0; i < rows.size(); ++i) {
    int y = rowY(i);
    if (!rows[i].op) {
      out += fmt::format("<text class=\"t elided\" x=\"{}\" y=\"{}\">⋯ {} ops not shown</text>", c.textX(), y + 4, rows[i].elided);
      continue;
    }
    const Op& op = *rows[i].op;
    out += fmt::format("<text class=\"time\" x=\"{}\" y=\"{}\">{:.1f} ms</text>", kTimeW - 8, y + 4,
                       static_cast<double>(op.time_us) / 1000.0);
    drawMarks(out, c, op, y);
    std::string cls = rows[i].kill ? "t kill" : rows[i].hot ? "t hot" : "t";
    if (rows[i].hold && !rows[i].kill) cls += " hold";
    out += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\">{}</text>", cls, c.textX(), y + 4, esc(cut(describe(c, op), c.textChars())));
  }
  return out + "</svg>";
}

} // namespace idem::html
