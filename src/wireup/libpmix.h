// libpmix (spec 07 §2), loaded at run time for the embedded PMIx server
// (pmix_server.h), and the info lists berth builds through it. Private to src/wireup.
#pragma once

#include <pmix.h>
#include <pmix_server.h>

#include <cstdint>
#include <string>

namespace berth::wireup {

// libpmix, loaded when the first PMIx server starts rather than linked: linked, it and
// what it needs (libevent, libmunge) cost every berth process about 0.7 ms of
// start-up on the development VM, and only a job wired up with PMIx starts a server.
// The functions berth calls, declared as pmix.h and pmix_server.h declare them.
struct LibPmix {
  decltype(&::PMIx_Info_list_add) PMIx_Info_list_add = nullptr;
  decltype(&::PMIx_Data_array_destruct) PMIx_Data_array_destruct = nullptr;
  decltype(&::PMIx_Info_list_convert) PMIx_Info_list_convert = nullptr;
  decltype(&::PMIx_server_setup_fork) PMIx_server_setup_fork = nullptr;
  decltype(&::PMIx_server_register_nspace) PMIx_server_register_nspace = nullptr;
  decltype(&::PMIx_server_register_client) PMIx_server_register_client = nullptr;
  decltype(&::PMIx_server_init) PMIx_server_init = nullptr;
  decltype(&::PMIx_server_finalize) PMIx_server_finalize = nullptr;
  decltype(&::PMIx_server_deregister_nspace) PMIx_server_deregister_nspace = nullptr;
  decltype(&::PMIx_server_deregister_client) PMIx_server_deregister_client = nullptr;
  decltype(&::PMIx_generate_regex) PMIx_generate_regex = nullptr;
  decltype(&::PMIx_generate_ppn) PMIx_generate_ppn = nullptr;
  decltype(&::PMIx_Info_list_start) PMIx_Info_list_start = nullptr;
  decltype(&::PMIx_Info_list_release) PMIx_Info_list_release = nullptr;
  decltype(&::PMIx_Error_string) PMIx_Error_string = nullptr;
  std::string error;  // why it is not usable; empty when it is
};

// The loaded library (once per process; thread-safe); `error` says why it is not usable.
const LibPmix& libpmix();

// A status as libpmix names it, with its number.
std::string status_text(pmix_status_t s);

// An info list built with libpmix's own list API; convert() hands its array out.
class InfoList {
 public:
  InfoList() : list_(libpmix().PMIx_Info_list_start()) {}
  ~InfoList() { libpmix().PMIx_Info_list_release(list_); }
  InfoList(const InfoList&) = delete;
  InfoList& operator=(const InfoList&) = delete;

  void u32(const char* key, uint32_t v) {
    libpmix().PMIx_Info_list_add(list_, key, &v, PMIX_UINT32);
  }
  void u16(const char* key, uint16_t v) {
    libpmix().PMIx_Info_list_add(list_, key, &v, PMIX_UINT16);
  }
  void rank(const char* key, pmix_rank_t v) {
    libpmix().PMIx_Info_list_add(list_, key, &v, PMIX_PROC_RANK);
  }
  void flag(const char* key, bool v) { libpmix().PMIx_Info_list_add(list_, key, &v, PMIX_BOOL); }
  void str(const char* key, const std::string& v) {
    libpmix().PMIx_Info_list_add(list_, key, v.c_str(), PMIX_STRING);
  }
  // A nested array (PMIX_PROC_DATA, PMIX_APP_INFO, PMIX_NODE_INFO): copied in.
  void array(const char* key, InfoList& inner) {
    pmix_data_array_t darray;
    libpmix().PMIx_Info_list_convert(inner.list_, &darray);
    libpmix().PMIx_Info_list_add(list_, key, &darray, PMIX_DATA_ARRAY);
    libpmix().PMIx_Data_array_destruct(&darray);
  }
  pmix_data_array_t convert() {
    pmix_data_array_t darray;
    libpmix().PMIx_Info_list_convert(list_, &darray);
    return darray;
  }

 private:
  void* list_;
};

}  // namespace berth::wireup
