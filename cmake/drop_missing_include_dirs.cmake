# PyPI ROS wheels export CMake targets whose include folders name the host that built them
# (e.g. /opt/python/cp311-cp311/include/python3.11), which makes CMake's generate step fail.
# Drop folders that do not exist from every imported target of the calling directory.
# A no-op on a normal ROS 2 install (see shared/ros2-from-pypi.md).
get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(_target ${_imported})
  get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_kept "")
    foreach(_dir ${_dirs})
      if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
  endif()
endforeach()
