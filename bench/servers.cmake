# Start/stop times of the embedded servers (prints, asserts nothing). Include from bench/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/servers.cmake)
add_executable(servers_bench ${CMAKE_CURRENT_LIST_DIR}/servers_bench.cc)
target_link_libraries(servers_bench PRIVATE idem_servers)
