#include "driver/progress.h"

#include "core/terminal.h"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace idem {

namespace {

/// Columns of a UTF-8 line (every code point counts one).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

} // namespace

Progress::Progress(std::string label, size_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()),
      lastPlain_(start_) {}

Progress::~Progress() { clear(); }

bool Progress::terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::string Progress::timeLeft(double elapsed, size_t done, size_t total) {
  if (done == 0 || done >= total || elapsed <= 0) return "";
  double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
  if (left < 90) return fmt::format("~{:.0f} s left", std::max(1.0, left));
  return fmt::format("~{:.0f} min left", left / 60);
}

void Progress::addTotal(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ += n;
  draw(false);
}

void Progress::done(bool violation) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  violations_ += violation;
  draw(violation);
}

void Progress::doneCount(size_t done) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  draw(false);
}

void Progress::setLabel(std::string label) {
  std::lock_guard<std::mutex> lock(mu_);
  label_ = std::move(label);
  draw(true);
}

size_t Progress::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

size_t Progress::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

void Progress::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_ || width_ == 0) return;
  std::fprintf(stderr, "\r%s\r", std::string(width_, ' ').c_str());
  std::fflush(stderr);
  width_ = 0;
}

std::string Progress::line() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // No total (a shrink, which ends when no smaller schedule fails): the count alone.
  std::string line = total_ ? fmt::format("  {}: {}/{} schedules", label_, done_, total_)
                            : fmt::format("  {}: {} schedule{}", label_, done_, done_ == 1 ? "" : "s");
  if (violations_) line += fmt::format(" · {} failed", violations_);
  std::string left = timeLeft(elapsed, done_, total_);
  if (!left.empty()) line += " · " + left;
  return escapeControls(line); // the label names a scenario or target (core/terminal.h)
}

void Progress::draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!enabled_) { // off a terminal: a line of its own once a minute
    if (now - lastPlain_ < std::chrono::minutes(1)) return;
    lastPlain_ = now;
    std::fprintf(stderr, "%s\n", line().c_str());
    std::fflush(stderr);
    return;
  }
  if (!force && now - lastDraw_ < std::chrono::milliseconds(100) && done_ < total_) return;
  lastDraw_ = now;
  const std::string line = this->line();
  size_t cols = columns(line), pad = width_ > cols ? width_ - cols : 0;
  std::fprintf(stderr, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
  std::fflush(stderr);
  width_ = cols;
}

} // namespace idem
