# The direct drivers the benchmarks set the harness against (bench/direct.h). Included from
# bench/CMakeLists.txt before the benchmarks that link it.
add_library(idem_bench_direct STATIC ${CMAKE_CURRENT_LIST_DIR}/direct.cc)
target_include_directories(idem_bench_direct PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(idem_bench_direct PUBLIC idem_driver)
