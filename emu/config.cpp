/* emu/config.cpp: the emulator's settings (emu/config.h). */
#include "emu/config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace plm_emu {

namespace {

long long number(const char *name, long long fallback, long long least, long long most) {
  const char *text = std::getenv(name);
  if (!text || !*text) return fallback;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < least || value > most) {
    std::fprintf(stderr, "plume cuda emulator: %s='%s' is not a number from %lld to %lld; using %lld\n",
                 name, text, least, most, fallback);
    return fallback;
  }
  return value;
}

}  // namespace

uint64_t config_seed() {
  static const uint64_t seed = (uint64_t)number("PLUME_EMU_SEED", 1, 0, (1LL << 62));
  return seed;
}

int config_block_threads() {
  static const int threads = (int)number("PLUME_EMU_BLOCK_THREADS", 1, 1, 16);
  return threads;
}

int config_devices() {
  static const int devices = (int)number("PLUME_EMU_DEVICES", 1, 1, 8);
  return devices;
}

int config_shared_optin_bytes() {
  static const int bytes = (int)number("PLUME_EMU_SHARED_OPTIN_KIB", 227, 48, 227) * 1024;
  return bytes;
}

bool config_count() {
  static const bool count = number("PLUME_EMU_COUNT", 0, 0, 1) == 1;
  return count;
}

bool config_continue_on_defect() {
  static const bool go_on = [] {
    const char *text = std::getenv("PLUME_EMU_ON_DEFECT");
    if (!text || !*text || std::strcmp(text, "abort") == 0) return false;
    if (std::strcmp(text, "continue") == 0) return true;
    std::fprintf(stderr, "plume cuda emulator: PLUME_EMU_ON_DEFECT='%s' is not abort or continue; "
                 "using abort\n", text);
    return false;
  }();
  return go_on;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9e3779b97f4a7c15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace plm_emu
