// Load SDFormat files with libsdformat (Debian's libsdformat 12) and print what the tests check,
// one JSON object per file: {"file", "errors": [...], "worlds": [...], "models": [...]}.
// "strict_errors" lists what loading with warnings treated as errors reports. Each world: name, plugins [{filename, name}], models; each model: name, links (with sensors
// {name, type}), joints {name, type}, plugins. Built and run by test/test_gazebo_sdformat.py.
#include <iostream>
#include <sstream>
#include <string>

#include <sdf/sdf.hh>

namespace {

std::string Quote(const std::string &text) {
  std::ostringstream out;
  out << '"';
  for (char c : text) {
    if (c == '"' || c == '\\') out << '\\' << c;
    else if (c == '\n') out << "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out << ' ';
    else out << c;
  }
  out << '"';
  return out.str();
}

std::string Plugins(sdf::ElementPtr element) {
  std::ostringstream out;
  out << '[';
  bool first = true;
  if (element && element->HasElement("plugin")) {
    for (auto plugin = element->GetElement("plugin"); plugin; plugin = plugin->GetNextElement("plugin")) {
      out << (first ? "" : ",") << "{\"filename\":" << Quote(plugin->Get<std::string>("filename"))
          << ",\"name\":" << Quote(plugin->Get<std::string>("name")) << '}';
      first = false;
    }
  }
  out << ']';
  return out.str();
}

std::string Model(const sdf::Model *model) {
  std::ostringstream out;
  out << "{\"name\":" << Quote(model->Name()) << ",\"static\":" << (model->Static() ? "true" : "false")
      << ",\"links\":[";
  for (uint64_t i = 0; i < model->LinkCount(); ++i) {
    const sdf::Link *link = model->LinkByIndex(i);
    out << (i ? "," : "") << "{\"name\":" << Quote(link->Name()) << ",\"sensors\":[";
    for (uint64_t j = 0; j < link->SensorCount(); ++j) {
      const sdf::Sensor *sensor = link->SensorByIndex(j);
      out << (j ? "," : "") << "{\"name\":" << Quote(sensor->Name()) << ",\"type\":" << Quote(sensor->TypeStr())
          << ",\"topic\":" << Quote(sensor->Topic()) << '}';
    }
    out << "]}";
  }
  out << "],\"joints\":[";
  for (uint64_t i = 0; i < model->JointCount(); ++i) {
    const sdf::Joint *joint = model->JointByIndex(i);
    out << (i ? "," : "") << "{\"name\":" << Quote(joint->Name()) << ",\"type\":"
        << Quote(joint->Element()->Get<std::string>("type")) << ",\"child\":" << Quote(joint->ChildLinkName()) << '}';
  }
  out << "],\"plugins\":" << Plugins(model->Element()) << '}';
  return out.str();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: sdformat_check FILE.sdf..." << std::endl;
    return 2;
  }
  sdf::Console::Instance()->SetQuiet(true);
  for (int a = 1; a < argc; ++a) {
    sdf::Root root;
    sdf::Errors errors = root.Load(argv[a]);
    std::cout << "{\"file\":" << Quote(argv[a]) << ",\"errors\":[";
    for (size_t i = 0; i < errors.size(); ++i) {
      std::ostringstream message;
      message << errors[i];
      std::cout << (i ? "," : "") << Quote(message.str());
    }
    // The same file with warnings treated as errors (unknown elements, e.g. gz-sim's extensions).
    sdf::ParserConfig strict;
    strict.SetWarningsPolicy(sdf::EnforcementPolicy::ERR);
    sdf::Root strictRoot;
    sdf::Errors warnings = strictRoot.Load(argv[a], strict);
    std::cout << "],\"strict_errors\":[";
    for (size_t i = 0; i < warnings.size(); ++i) {
      std::ostringstream message;
      message << warnings[i];
      std::cout << (i ? "," : "") << Quote(message.str());
    }
    std::cout << "],\"worlds\":[";
    for (uint64_t w = 0; w < root.WorldCount(); ++w) {
      const sdf::World *world = root.WorldByIndex(w);
      std::cout << (w ? "," : "") << "{\"name\":" << Quote(world->Name()) << ",\"plugins\":"
                << Plugins(world->Element()) << ",\"models\":[";
      for (uint64_t m = 0; m < world->ModelCount(); ++m) {
        std::cout << (m ? "," : "") << Model(world->ModelByIndex(m));
      }
      std::cout << "]}";
    }
    std::cout << "],\"models\":[";
    if (root.Model() != nullptr) {
      std::cout << Model(root.Model());
    }
    std::cout << "]}" << std::endl;
  }
  return 0;
}
