#include "error_record.h"

#include "expr_eval.h"

namespace etc::rt {
namespace {

std::string taskText(const EtcError& e, const Descriptor& d) {
  if (e.task < 0) return "";
  std::string name = static_cast<size_t>(e.task) < d.tasks.size() ? "@" + d.tasks[e.task].name : "#" + std::to_string(e.task);
  std::string coords;
  int n = std::min(std::max(e.ncoords, 0), ETC_MAX_RANK);
  for (int i = 0; i < n; ++i) coords += (i ? ", " : "") + std::to_string(e.coords[i]);
  return " in task " + name + " (" + coords + ")";
}

// "done[2, 1]": the linear element index unravelled over the event's extents for these syms;
// "done[#37]" when the extents cannot be computed or the index is outside them.
std::string elementText(const EtcError& e, const Descriptor& d, const std::vector<int64_t>& syms) {
  if (e.event < 0 || static_cast<size_t>(e.event) >= d.events.size()) return "event #" + std::to_string(e.event);
  const EventDesc& ev = d.events[e.event];
  std::vector<int64_t> ext;
  try {
    if (syms.size() == d.syms.size())
      for (const nlohmann::json& x : ev.shape) ext.push_back(evalExpr(x, syms));
  } catch (...) {
    ext.clear();
  }
  int64_t total = 1;
  bool ok = ext.size() == ev.shape.size();
  for (int64_t x : ext) ok = ok && x > 0 && !__builtin_mul_overflow(total, x, &total);
  if (!ok || e.element < 0 || e.element >= total) return "event " + ev.name + "[#" + std::to_string(e.element) + "]";
  std::vector<int64_t> idx(ext.size());
  int64_t rest = e.element;
  for (size_t i = ext.size(); i-- > 0;) {
    idx[i] = rest % ext[i];
    rest /= ext[i];
  }
  std::string out = "event " + ev.name + "[";
  for (size_t i = 0; i < idx.size(); ++i) out += (i ? ", " : "") + std::to_string(idx[i]);
  return out + "]";
}

}  // namespace

std::string describeError(const EtcError& e, const Descriptor& d, const std::vector<int64_t>& syms) {
  std::string where = taskText(e, d);
  std::string out;
  switch (e.code) {
    case ETC_ERR_NONE:
      return "no error";
    case ETC_ERR_WAIT_TIMEOUT:
      out = "wait timed out" + where + ": " + elementText(e, d, syms) + " has " + std::to_string(e.count) + " of " +
            std::to_string(e.target) + " notifies";
      break;
    case ETC_ERR_OVER_NOTIFY:
      out = "too many notifies" + where + ": " + elementText(e, d, syms) + " got " + std::to_string(e.count) +
            " notifies, its count is " + std::to_string(e.target);
      break;
    case ETC_ERR_BOUND:
      out = "a data-dependent extent exceeded its stated bound" + where;
      break;
    case ETC_ERR_QUEUE_STARVED:
      out = "the dynamic schedule's task queue stayed empty past the watchdog budget: " + std::to_string(e.count) + " of " +
            std::to_string(e.target) + " tasks had become ready and no other did (a dependency cycle or a missing notify)";
      break;
    case ETC_ERR_ABORTED:
      out = "the kernel was stopped by an error in another CTA" + where;
      break;
    default:
      out = "the kernel reported unknown error code " + std::to_string(e.code) + where;
  }
  // The winner writes `done` last; 0 means the record was read before it was complete.
  if (e.done != 1) out += " (the error record is incomplete)";
  return out;
}

}  // namespace etc::rt
