/* Opens the fatbin that etc_add_module built and prints what its descriptor says (no GPU needed). */
#include <etc/runtime.h>
#include <stdio.h>

int main(void) {
  etc_module m = NULL;
  if (etc_module_open_file(FATBIN, &m) != ETC_STATUS_OK) {
    fprintf(stderr, "describe: %s\n", etc_last_error_message());
    return 1;
  }
  etc_sym_info s;
  if (etc_module_num_syms(m) != 1 || etc_module_sym_info(m, 0, &s) != ETC_STATUS_OK) return 1;
  printf("module %s, targets %s, sym %s in [%lld, %lld]\n", etc_module_name(m), etc_module_fatbin_targets(m),
         s.name, (long long)s.lo, (long long)s.hi);
  etc_module_destroy(m);
  return 0;
}
