"""Reading a program as Fluid 1.x scripts do: Program.to_string and
str(program), num_blocks, block(i), blocks, list_vars, Block.vars / var /
has_var / ops, and the Operator objects of block.ops (type, input,
output, input_names, output_names, input_arg_names, output_arg_names,
attr, has_attr, attr_names, all_attrs)."""
import pytest

import fluid

L = fluid.layers


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, 16, act="relu")
        logits = L.fc(h, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, x, h, loss


def test_block_ops_are_operators_with_fluids_accessors():
    main, _, x, _, _ = build()
    block = main.global_block()
    ops = block.ops
    assert [op.type for op in ops] == main.op_types()
    mul = ops[0]
    assert mul.type == "mul" and mul.idx == 0 and mul.block.idx == 0
    assert mul.input_names == ["X", "Y"]
    assert mul.output_names == ["Out"]
    w = main.all_parameters()[0].name
    assert mul.input("X") == [x.name] and mul.input("Y") == [w]
    assert mul.input_arg_names == [x.name, w]
    assert mul.output_arg_names == mul.output("Out")
    assert mul.has_attr("x_num_col_dims") and mul.attr("x_num_col_dims") == 1
    assert not mul.has_attr("no_such_attr")
    assert set(mul.attr_names) == set(mul.all_attrs())
    assert mul.all_attrs()["op_role"] == 0  # forward
    act = ops[2]
    assert act.type == "relu"
    # The dict form of Program.ops() still reads.
    assert mul["type"] == "mul" and mul["inputs"]["X"] == [x.name]
    assert mul["roles"] == ["forward"]
    sgd = [op for op in ops if op.type == "sgd"]
    assert len(sgd) == 4 and all("optimize" in op["roles"] for op in sgd)
    assert sgd[0].input("LearningRate")


def test_missing_slots_and_attributes_are_named():
    main, _, _, _, _ = build()
    mul = main.global_block().ops[0]
    with pytest.raises(ValueError, match=r"op 'mul' has no input slot 'W'; "
                       r"its inputs: X, Y"):
        mul.input("W")
    with pytest.raises(ValueError, match="op 'mul' has no output slot 'Y'"):
        mul.output("Y")
    with pytest.raises(ValueError, match=r"op 'mul' has no attribute "
                       r"'axis'; its attributes: .*x_num_col_dims"):
        mul.attr("axis")


def test_blocks_and_vars():
    main, startup, x, h, _ = build()
    assert main.num_blocks == 1 and startup.num_blocks == 1
    assert [b.idx for b in main.blocks] == [0]
    block = main.block(0)
    assert block.parent_idx == -1
    assert block.var(x.name).shape == (-1, 8)
    assert block.vars[h.name].name == h.name
    assert block.has_var(h.name) and not block.has_var("ghost")
    with pytest.raises(ValueError, match="var 'ghost' is not in block 0"):
        block.var("ghost")
    with pytest.raises(IndexError, match="one block, block 0"):
        main.block(1)
    with pytest.raises(TypeError, match="expected an int"):
        main.block("0")
    names = [v.name for v in main.list_vars()]
    assert names == list(block.vars) and x.name in names
    assert all(v.block.idx == 0 for v in main.list_vars())
    assert {p.name for p in block.all_parameters()} == \
        {p.name for p in main.all_parameters()}


def test_a_parameter_server_program_has_several_blocks():
    main, startup, _, _, _ = build()
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers="127.0.0.1:6174", trainers=2,
                startup_program=startup)
    server = t.get_pserver_program("127.0.0.1:6174")
    assert server.num_blocks > 1
    assert [op.type for op in server.global_block().ops] == \
        ["listen_and_serv"]
    inner = server.block(1)
    assert inner.parent_idx == 0
    assert "sgd" in [op.type for op in inner.ops]
    with pytest.raises(IndexError, match=f"{server.num_blocks} blocks, 0 to "
                       f"{server.num_blocks - 1}"):
        server.block(server.num_blocks)
    # The optimize blocks read vars of block 0: declared by an enclosing
    # block, so the text dump checks them without complaint.
    text = server.to_string(True)
    for i in range(server.num_blocks):
        assert f"block {i} (parent {server.block(i).parent_idx})" in text
    assert len(server.list_vars()) == sum(len(b.vars)
                                          for b in server.blocks)


def test_to_string_lists_blocks_vars_and_ops():
    main, _, x, h, _ = build()
    text = main.to_string(True)
    assert str(main) == text
    lines = text.splitlines()
    assert lines[0].startswith("block 0 (parent -1): ")
    assert f"  var {x.name}: float32 [-1, 8]" in lines
    w = main.all_parameters()[0].name
    assert f"  var {w}: float32 [8, 16], persistable, trainable" in lines
    assert any(l.startswith(f"  op #0 mul(X=[{x.name}], Y=[{w}]) -> (Out=[")
               for l in lines), text
    assert "attrs:" not in text and "built at" not in text
    detailed = main.to_string(False, with_details=True)
    assert "  roles: forward" in detailed
    assert "x_num_col_dims=1" in detailed
    assert "  built at " + __file__ in detailed
    assert f"{x.name}: float32 [-1, 8], stop_gradient" in detailed


def test_to_string_checks_its_arguments_and_the_program():
    main, _, _, _, _ = build()
    with pytest.raises(TypeError, match=r"throw_on_error=1\): expected a "
                       "bool"):
        main.to_string(1)
    with pytest.raises(TypeError, match="with_details='yes'"):
        main.to_string(True, with_details="yes")
    broken = fluid.Program.parse(_program_reading("ghost"))
    with pytest.raises(ValueError, match=r"op #0 'relu' of block 0 reads "
                       r"'ghost', which neither the block nor an enclosing "
                       "one declares"):
        broken.to_string(True)
    assert "op #0 relu(X=[ghost])" in broken.to_string(False)


def _program_reading(name):
    """The bytes of a ProgramDesc of one block holding one relu op that
    reads `name` and writes `out`, neither declared (the protobuf wire
    format by hand: no program built through the API is this broken)."""
    def varint(n):
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out

    def field(number, payload):
        if isinstance(payload, int):
            return varint(number << 3) + varint(payload)
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    def slot(parameter, argument):
        return field(1, parameter.encode()) + field(2, argument.encode())

    op = field(1, b"relu") + field(2, slot("X", name)) + \
        field(3, slot("Out", "out"))
    block = field(1, 0) + field(4, op)  # idx 0, parent -1 by default
    return field(2, block)
