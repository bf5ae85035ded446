# Unity builds of an interface package's C typesupports and Python extension (ROBOT_TEAM_UNITY_BUILD,
# ON in scripts/setup.sh's embedded build; OFF by default, as colcon builds on a ROS 2 install).
# rosidl compiles one file per interface for each of these targets, and each file parses the same
# heavy headers (Fast CDR's for rosidl_typesupport_fastrtps_c, Python's for the extension): batched
# into a few translation units by CMake's UNITY_BUILD, nav2_msgs' fastrtps_c compiles in about a
# quarter of the time (docs/benchmarks.md). Their generated symbols are named after each interface,
# so batching is safe; rosidl_generator_c's files are not (every *__description.c defines the same
# static hashes of shared dependencies) and stay one per file.
# Include after rosidl_generate_interfaces().
option(ROBOT_TEAM_UNITY_BUILD "Batch the C typesupport and Python extension sources (CMake UNITY_BUILD)" OFF)
if(ROBOT_TEAM_UNITY_BUILD)
  foreach(_suffix rosidl_typesupport_fastrtps_c rosidl_typesupport_introspection_c rosidl_typesupport_c
                  rosidl_generator_py)
    if(TARGET ${PROJECT_NAME}__${_suffix})
      set_target_properties(${PROJECT_NAME}__${_suffix} PROPERTIES UNITY_BUILD ON)
    endif()
  endforeach()
  # rosidl_generator_c: every file but the type descriptions (each *__description.c defines the
  # same static hashes of the interfaces it refers to), which stay one translation unit each.
  if(TARGET ${PROJECT_NAME}__rosidl_generator_c)
    get_target_property(_sources ${PROJECT_NAME}__rosidl_generator_c SOURCES)
    set(_descriptions ${_sources})
    list(FILTER _descriptions INCLUDE REGEX "__description\\.c$")
    set_source_files_properties(${_descriptions} TARGET_DIRECTORY ${PROJECT_NAME}__rosidl_generator_c
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    set_target_properties(${PROJECT_NAME}__rosidl_generator_c PROPERTIES UNITY_BUILD ON)
  endif()
endif()
