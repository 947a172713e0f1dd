// Typed errors. Text is formatted once, where the error is raised; main prints it.
#pragma once

#include <stdexcept>
#include <string>

namespace evgate {

// Anything the user can fix: a bad input file, a bad option, a broken run.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A user input file at fault, with the line (1-based; 0 when the whole file is at fault).
class InputError : public Error {
public:
    InputError(std::string file, int line, const std::string& what)
        : Error(line > 0 ? file + ":" + std::to_string(line) + ": " + what : file + ": " + what),
          file_(std::move(file)),
          line_(line) {}

    const std::string& file() const { return file_; }
    int line() const { return line_; }

private:
    std::string file_;
    int line_;
};

// Quote a user value for an error message (not named quoted: ADL would find std::quoted): 'value'.
inline std::string quote(const std::string& value) { return "'" + value + "'"; }

}  // namespace evgate
