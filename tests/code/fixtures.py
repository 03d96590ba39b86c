"""Rows in the hub's own layouts: google-research-datasets/mbpp (full and sanitized)
and openai/openai_humaneval, copied from the datasets (first tasks of each)."""

from __future__ import annotations

MBPP_FULL = [
    {
        "task_id": 2,
        "text": "Write a function to find the similar elements from the given two tuple lists.",
        "code": "def similar_elements(test_tup1, test_tup2):\r\n  res = tuple(set(test_tup1) & set(test_tup2))\r\n"
                "  return (res) ",
        "test_list": ["assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)",
                      "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)",
                      "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 3,
        "text": "Write a python function to identify non-prime numbers.",
        "code": "import math\r\ndef is_not_prime(n):\r\n    result = False\r\n    for i in range(2,int(math.sqrt(n)) + 1):"
                "\r\n        if n % i == 0:\r\n            result = True\r\n    return result",
        "test_list": ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True",
                      "assert is_not_prime(35) == True"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 4,
        "text": "Write a function to find the largest integers from a given list of numbers using heap queue "
                "algorithm.",
        "code": "import heapq as hq\r\ndef heap_queue_largest(nums,n):\r\n  largest_nums = hq.nlargest(n, nums)\r\n"
                "  return largest_nums",
        "test_list": ["assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],3)==[85, 75, 65] ",
                      "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],2)==[85, 75] ",
                      "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],5)==[85, 75, 65, 58, 35]"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 7,
        "text": "Write a function to find all words which are at least 4 characters long in a string by using regex.",
        "code": "import re\r\ndef find_char_long(text):\r\n  return (re.findall(r\"\\b\\w{4,}\\b\", text))",
        "test_list": ["assert find_char_long('Please move back to stream') == ['Please', 'move', 'back', 'stream']",
                      "assert find_char_long('Jing Eco and Tech') == ['Jing', 'Tech']",
                      "assert find_char_long('Jhingai wulu road Zone 3') == ['Jhingai', 'wulu', 'road', 'Zone']"],
        "test_setup_code": "",
        "challenge_test_list": ["assert find_char_long('abc defg') == ['defg']"],
    },
]

MBPP_SANITIZED = [
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 3,
        "prompt": "Write a python function to identify non-prime numbers.",
        "code": "import math\ndef is_not_prime(n):\n    result = False\n    for i in range(2,int(math.sqrt(n)) + 1):\n"
                "        if n % i == 0:\n            result = True\n    return result",
        "test_imports": [],
        "test_list": ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True",
                      "assert is_not_prime(35) == True", "assert is_not_prime(37) == False"],
    },
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 17,
        "prompt": "Write a function that returns the perimeter of a square given its side length as input.",
        "code": "def square_perimeter(a):\n  perimeter=4*a\n  return perimeter",
        "test_imports": ["import math"],
        "test_list": ["assert square_perimeter(10)==40", "assert math.isclose(square_perimeter(2.5), 10.0)"],
    },
]

HUMANEVAL = [
    {
        "task_id": "HumanEval/0",
        "prompt": "from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                  "    \"\"\" Check if in given list of numbers, are any two numbers closer to each other than\n"
                  "    given threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n"
                  "    >>> has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)\n    True\n    \"\"\"\n",
        "canonical_solution": "    for idx, elem in enumerate(numbers):\n        for idx2, elem2 in enumerate(numbers):\n"
                              "            if idx != idx2:\n                distance = abs(elem - elem2)\n"
                              "                if distance < threshold:\n                    return True\n\n"
                              "    return False\n",
        "test": "\n\nMETADATA = {\n    'author': 'jt',\n    'dataset': 'test'\n}\n\n\ndef check(candidate):\n"
                "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
                "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
                "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n"
                "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) == False\n"
                "    assert candidate([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True\n"
                "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True\n"
                "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False\n\n",
        "entry_point": "has_close_elements",
    },
    {
        "task_id": "HumanEval/2",
        "prompt": "\n\ndef truncate_number(number: float) -> float:\n    \"\"\" Given a positive floating point number, "
                  "it can be decomposed into\n    and integer part (largest integer smaller than given number) and "
                  "decimals\n    (leftover part always smaller than 1).\n\n    Return the decimal part of the number.\n"
                  "    >>> truncate_number(3.5)\n    0.5\n    \"\"\"\n",
        "canonical_solution": "    return number % 1.0\n",
        "test": "\n\nMETADATA = {\n    'author': 'jt',\n    'dataset': 'test'\n}\n\n\ndef check(candidate):\n"
                "    assert candidate(3.5) == 0.5\n    assert abs(candidate(1.33) - 0.33) < 1e-6\n"
                "    assert abs(candidate(123.456) - 0.456) < 1e-6\n",
        "entry_point": "truncate_number",
    },
]


def mbpp_dir(write, root):
    """google-research-datasets/mbpp's repository layout: full/ and sanitized/ of split-named parquet."""
    write.parquet(root / "full" / "train-00000-of-00001.parquet", MBPP_FULL)
    write.parquet(root / "full" / "test-00000-of-00001.parquet", MBPP_FULL[:2])
    write.parquet(root / "sanitized" / "train-00000-of-00001.parquet", MBPP_SANITIZED)
    return root


def humaneval_dir(write, root):
    """openai/openai_humaneval's repository layout."""
    write.parquet(root / "openai_humaneval" / "test-00000-of-00001.parquet", HUMANEVAL)
    return root
