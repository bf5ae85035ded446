# Which rosidl generators run for an interface package. ROS 2 runs every generator that is installed
# (C, C++, Python and each of their typesupports); rclpy needs only the C ones and Python: the
# generated Python imports <pkg>_s__rosidl_typesupport_c, which dispatches to the C typesupports
# (fastrtps_c, introspection_c). The embedded setup (scripts/setup.sh) builds for rclpy only and passes
# -DROBOT_TEAM_SKIP_CPP_INTERFACES=ON, which drops the C++ generators (headers, typesupport_cpp,
# fastrtps_cpp, introspection_cpp): a third of the compiled files and the slowest of them. Left OFF
# (the default: a colcon build on a ROS 2 install), every installed generator runs, as usual.
# Include after every find_package() and before rosidl_generate_interfaces().
option(ROBOT_TEAM_SKIP_CPP_INTERFACES "Generate only what rclpy needs (C, C typesupports, Python)" OFF)
if(ROBOT_TEAM_SKIP_CPP_INTERFACES)
  list(FILTER AMENT_EXTENSIONS_rosidl_generate_idl_interfaces EXCLUDE REGEX
    "^rosidl_(generator_cpp|typesupport_cpp|typesupport_fastrtps_cpp|typesupport_introspection_cpp):")
  message(STATUS "rosidl generators (C++ skipped): ${AMENT_EXTENSIONS_rosidl_generate_idl_interfaces}")
endif()
