/* emu/check/report.cpp: defect reports (report_defect, emu/emu.h) and source lines.
 *
 * A report is "plume cuda emulator: <title>" and its indented lines of detail on stderr,
 * then, where a sanitizer runtime is in the process, the stack of the thread that found
 * it; then the process aborts, as a sanitizer does, unless PLUME_EMU_ON_DEFECT=continue
 * (each distinct report is then printed once and the run goes on). */
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "emu/check/check.h"
#include "emu/config.h"

extern "C" {
void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *out_buf, size_t out_buf_size)
    __attribute__((weak));
void __sanitizer_print_stack_trace(void) __attribute__((weak));
int __asan_address_is_poisoned(void const volatile *addr) __attribute__((weak));
}

namespace plm_emu {

namespace {
std::mutex report_lock;
std::set<std::string> &reported() {
  static auto *seen = new std::set<std::string>();
  return *seen;
}
}  // namespace

bool have_asan() { return __asan_address_is_poisoned != nullptr; }

/* "file:line" from binutils' addr2line where no sanitizer's symbolizer is in the process
 * (reports are rare: a process per line is fine); empty when it cannot say. */
static std::string addr2line(const char *module, size_t offset) {
  std::string command = "addr2line -e '";
  for (const char *c = module; *c; c++) {
    if (*c == '\'') command += "'\\''";
    else command += *c;
  }
  char tail[64];
  std::snprintf(tail, sizeof tail, "' 0x%zx 2>/dev/null", offset);
  command += tail;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  char text[1024] = "";
  const bool got = std::fgets(text, sizeof text, pipe) != nullptr;
  pclose(pipe);
  std::string line = got ? text : "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.empty() || line[0] == '?') return "";
  const size_t note = line.find(" (discriminator");
  if (note != std::string::npos) line.erase(note);
  return line;
}

std::string source_line(const void *pc) {
  if (!pc) return "(unknown place)";
  const void *call = (const char *)pc - 1; /* the call, not the instruction after it */
  if (__sanitizer_symbolize_pc) {
    char text[512] = "";
    __sanitizer_symbolize_pc(const_cast<void *>(call), "%s:%l", text, sizeof text);
    if (text[0] && text[0] != ':' && std::string(text).find("<null>") == std::string::npos) return text;
  }
  Dl_info info;
  if (dladdr(call, &info) && info.dli_fname) {
    const size_t offset = (size_t)((const char *)call - (const char *)info.dli_fbase);
    std::string line = addr2line(info.dli_fname, offset);
    if (!line.empty()) return line;
    char text[512];
    std::snprintf(text, sizeof text, "%s+0x%zx", info.dli_fname, offset);
    return text;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%p", call);
  return text;
}

void report_defect(const std::string &title, const std::string &detail) {
  std::lock_guard<std::mutex> hold(report_lock);
  if (config_continue_on_defect() && !reported().insert(title + "\n" + detail).second) return;
  std::string text = "plume cuda emulator: " + title + "\n";
  size_t start = 0;
  while (start <= detail.size()) {
    size_t end = detail.find('\n', start);
    if (end == std::string::npos) end = detail.size();
    std::string line = detail.substr(start, end - start);
    while (!line.empty() && line[0] == ' ') line.erase(0, 1);
    if (!line.empty()) text += "  " + line + "\n";
    start = end + 1;
  }
  std::fputs(text.c_str(), stderr);
  if (config_continue_on_defect()) return;
  if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
  std::fflush(stderr);
  std::abort();
}

}  // namespace plm_emu
