variable "required" {} # ERROR: No value for required variable

variable "1bad" { # ERROR: Invalid variable name
  default = 1
}

variable "wrong_type" {
  type    = list(string)
  default = "x" # ERROR: Invalid value for input variable
}

variable "refs" {
  default = var.required # ERROR: Variables not allowed
}

variable "checked" {
  type    = string
  default = "banana" # ERROR: Invalid value for variable
  validation {
    condition     = contains(["apple"], var.checked)
    error_message = "Must be apple."
  }
}

variable "bad_rule" {
  default = "x"
  validation {
    condition     = var.required == "x" # ERROR: Invalid reference in variable validation
    error_message = "Nope."
  }
}

variable "bad_type" {
  type    = strin # ERROR: Invalid type specification
  default = "x"
}

variable "unknown_arg" {
  default  = 1
  nullable = true # ERROR: Unsupported argument
}
