// libpmix loaded at run time (libpmix.h).
#include "wireup/libpmix.h"

#include <fmt/format.h>

#include "util/shared_library.h"

namespace berth::wireup {

const LibPmix& libpmix() {
  static const LibPmix api = [] {
    LibPmix p;
    SharedLibrary lib(BERTH_LIBPMIX, "libpmix2");
    lib.bind(p.PMIx_Info_list_add, "PMIx_Info_list_add");
    lib.bind(p.PMIx_Data_array_destruct, "PMIx_Data_array_destruct");
    lib.bind(p.PMIx_Info_list_convert, "PMIx_Info_list_convert");
    lib.bind(p.PMIx_server_setup_fork, "PMIx_server_setup_fork");
    lib.bind(p.PMIx_server_register_nspace, "PMIx_server_register_nspace");
    lib.bind(p.PMIx_server_register_client, "PMIx_server_register_client");
    lib.bind(p.PMIx_server_init, "PMIx_server_init");
    lib.bind(p.PMIx_server_finalize, "PMIx_server_finalize");
    lib.bind(p.PMIx_server_deregister_nspace, "PMIx_server_deregister_nspace");
    lib.bind(p.PMIx_server_deregister_client, "PMIx_server_deregister_client");
    lib.bind(p.PMIx_generate_regex, "PMIx_generate_regex");
    lib.bind(p.PMIx_generate_ppn, "PMIx_generate_ppn");
    lib.bind(p.PMIx_Info_list_start, "PMIx_Info_list_start");
    lib.bind(p.PMIx_Info_list_release, "PMIx_Info_list_release");
    lib.bind(p.PMIx_Error_string, "PMIx_Error_string");
    p.error = lib.error();
    return p;
  }();
  return api;
}

std::string status_text(pmix_status_t s) {
  return fmt::format("{} ({})", libpmix().PMIx_Error_string(s), s);
}

}  // namespace berth::wireup
