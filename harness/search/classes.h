#pragma once
/// The class sweep that opens every `check`: before its random schedules, one schedule per class of kill
/// point of the trace, (when, verb) of the KillModel, at its first k, on the scenario's default events each
/// delivered once. A bug that one kill exposes is found within a few schedules, not at a random one's
/// chance (bench/first_bug_bench.cc measures it against kills at random times).
///
/// Cases stay values of (seed, index) alone: case i < classes is the i-th class shape, case i after them
/// is generateCase(gen, seed, i - classes), the random schedules of the same seed as before the sweep
/// existed. Shards split the indices as before (search/shard.h). A class shape shrinks like a generated
/// one, toward fewer events and no fault (fixedCase).
#include "search/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace idem {

/// The class shapes, in the order the sweep runs them. First the verbs done once per event (the work of an
/// entry, per-event slope >= 1/2): `before` each of them, from the last one of the trace back to the
/// first — each state of an entry's work once, the most done and least acknowledged first (before:XACK:
/// every effect made, none acknowledged) — then `after` each of them in the same order (the same states
/// with a reply lost). Then the other verbs (reads, set-up) in trace order, before then after. Each has the default schedule's events (up to p.maxEvents, padded
/// to p.minEvents), no retries, c1..c(p.minConsumers), no holds, and one fault of the first kind of
/// p.faultKinds at VERB#1 (a verb that many events never reach is left out). For an HTTP scenario with
/// `delay` among p.faultKinds and a declared lease (p.leaseMs): one request its client gives up on, and a
/// delay past the lease before VERB#1 of each verb. Empty when no fault is drawn (p.maxKills 0) or when the
/// model is empty. Last, the slow-work shapes and the late-answer shapes.
std::vector<Shape> classShapes(const Scenario& sc, const KillModel& km, const ModelParams& p);

/// Slow work past an acknowledgement (p.slowWork, from the trace of a consumer that acknowledges several
/// entries at once): at its first point and at its last, the default schedule's events with one consumer,
/// a delay of p.slowWorkMs before c1's step there and c1 killed right after its next acknowledgement. None
/// unless `delay` and `kill` are both among p.faultKinds, or when a point lies past what every run reaches.
std::vector<Shape> slowWorkShapes(const Scenario& sc, const KillModel& km, const ModelParams& p);

/// A sink whose consumer's call timeout is declared (p.callTimeoutMs), `delay` among p.faultKinds: the
/// default schedule's events with one consumer and a delay past that timeout at c1's first CALL, after the
/// sink executed it (an answer that comes too late) and before (a request the sink gets after its client
/// gave up on it). None otherwise.
std::vector<Shape> lateAnswerShapes(const Scenario& sc, const KillModel& km, const ModelParams& p);

/// What check's first runs do, for its progress: "runs 1..20 kill once at each class of kill point of the
/// trace (when, verb), r1's too, …; random schedules after them" (`runs`: how many runs were asked for).
std::string classSweepLine(const std::vector<Shape>& classes, size_t runs, bool http);

/// A fixed shape as a shrinkable: its shrinks drop the faults (when p.minKills is 0), then one event at a
/// time (never below max(1, p.minEvents)), recursively.
rc::Shrinkable<Shape> fixedCase(const Shape& s, const ModelParams& p);

/// The cases of a search: the class shapes first, then the generator's.
class Cases {
public:
  Cases(rc::Gen<Shape> gen, std::vector<Shape> classes, ModelParams p, uint64_t seed)
      : gen_(std::move(gen)), classes_(std::move(classes)), p_(std::move(p)), seed_(seed) {}
  rc::Shrinkable<Shape> at(uint64_t index) const {
    return index < classes_.size() ? fixedCase(classes_[index], p_) : generateCase(gen_, seed_, index - classes_.size());
  }
  size_t classes() const { return classes_.size(); }

private:
  rc::Gen<Shape> gen_;
  std::vector<Shape> classes_;
  ModelParams p_;
  uint64_t seed_;
};

} // namespace idem
